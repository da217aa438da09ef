package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestCommands(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string // substrings of standard output
		wantErr  []string // substrings of standard error
	}{
		{name: "version", args: []string{"version"}, wantOut: []string{"flotilla dev", "linux/"}},
		{name: "help lists verbs", args: []string{"--help"}, wantOut: []string{"demo", "version", "Examples:"}},
		{name: "demo help has an example", args: []string{"demo", "--help"}, wantOut: []string{"flotilla demo --clusters 2", "--bin-dir"}},
		{name: "unknown flag", args: []string{"version", "--bogus"}, wantCode: 2, wantErr: []string{"unknown flag: --bogus"}},
		{name: "bad output format", args: []string{"version", "-o", "yaml"}, wantCode: 2, wantErr: []string{`want text or json, got "yaml"`}},
		{name: "bad log level", args: []string{"version", "--log-level", "loud"}, wantCode: 2, wantErr: []string{`--log-level "loud"`}},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 1, wantErr: []string{`unknown command "frobnicate"`}},
		{name: "demo needs a cluster", args: []string{"demo", "--clusters", "0"}, wantCode: 2, wantErr: []string{"--clusters must be at least 1"}},
		{name: "demo without binaries", args: []string{"demo", "--bin-dir", "/nonexistent"}, wantCode: 1, wantErr: []string{"kube-apiserver binary not found", "make kube-binaries"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(t.Context(), tt.args, &out, &errOut)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr: %s)", code, tt.wantCode, errOut.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout does not contain %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, errOut.String())
				}
			}
		})
	}
}

func TestVersionJSON(t *testing.T) {
	var out bytes.Buffer
	if code := Run(t.Context(), []string{"version", "-o", "json"}, &out, &out); code != 0 {
		t.Fatalf("exit code %d: %s", code, out.String())
	}
	var got struct{ Version, GoVersion, Platform string }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if got.Version != "dev" || !strings.HasPrefix(got.GoVersion, "go") || got.Platform == "" {
		t.Errorf("version JSON = %+v", got)
	}
}

// TestDemoRunsAReachableClusterUntilInterrupted runs `flotilla demo` as a user would: it waits
// for the printed kubeconfig, talks to the cluster through it, then interrupts the demo.
func TestDemoRunsAReachableClusterUntilInterrupted(t *testing.T) {
	dataDir := t.TempDir()
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- Run(ctx, []string{"demo", "--clusters", "1", "--dir", dataDir}, &out, &errOut) }()

	kubeconfigLine := regexp.MustCompile(`cluster-1 +https://127\.0\.0\.1:\d+ +kubeconfig: (\S+)`)
	var kubeconfig string
	deadline := time.After(3 * time.Minute)
	for kubeconfig == "" {
		select {
		case code := <-done:
			t.Fatalf("demo exited early with %d:\n%s\n%s", code, out.String(), errOut.String())
		case <-deadline:
			t.Fatalf("demo printed no kubeconfig within 3 minutes:\n%s\n%s", out.String(), errOut.String())
		case <-time.After(200 * time.Millisecond):
		}
		if m := kubeconfigLine.FindStringSubmatch(out.String()); m != nil {
			kubeconfig = m[1]
		}
	}
	if want := filepath.Join(dataDir, "cluster-1", "kubeconfig"); kubeconfig != want {
		t.Errorf("kubeconfig path = %s, want %s", kubeconfig, want)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	v, err := kubernetes.NewForConfigOrDie(cfg).Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("cluster from the demo's kubeconfig does not answer: %v", err)
	}
	if v.GitVersion == "" {
		t.Errorf("server version is empty: %+v", v)
	}

	interrupt()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("demo exit code after Ctrl-C = %d, want 0\n%s", code, errOut.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("demo did not stop within a minute of Ctrl-C")
	}
	if !strings.Contains(errOut.String(), "Stopping the local fleet") {
		t.Errorf("no stop message on stderr:\n%s", errOut.String())
	}
	// --dir keeps the data for inspection.
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Errorf("kubeconfig under --dir was not kept: %v", err)
	}
}

// syncBuffer is a bytes.Buffer that the command can write while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
