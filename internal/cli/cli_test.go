package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

func TestCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string // substrings of standard output
		wantErr  []string // substrings of standard error
	}{
		{name: "version", args: []string{"version"}, wantOut: []string{"flotilla dev", "linux/"}},
		{name: "help lists verbs", args: []string{"--help"}, wantOut: []string{"demo", "version", "Examples:"}},
		{name: "demo help has an example", args: []string{"demo", "--help"}, wantOut: []string{"flotilla demo --data-dir ./demo", "--bin-dir"}},
		{name: "status without a hub says where to set it", args: []string{"status", "--token", "x"}, wantCode: 2, wantErr: []string{"no hub address: give --hub or set FLOTILLA_HUB", "Hint: after `make demo`, `source out/demo/demo.env`"}},
		{name: "get lists its kinds", args: []string{"get"}, wantCode: 2, wantErr: []string{"flotilla get: needs a kind: clusters, releases or sources (usage: flotilla get clusters|releases|sources"}},
		{name: "get of an unknown kind lists them, before any connection", args: []string{"get", "pods"}, wantCode: 2, wantErr: []string{`unknown kind "pods": want clusters, releases or sources`}},
		{name: "cluster show needs a cluster name", args: []string{"cluster", "show"}, wantCode: 2, wantErr: []string{"flotilla cluster show: needs a cluster name (usage: flotilla cluster show NAME"}},
		{name: "cluster label needs a change", args: []string{"cluster", "label", "c1"}, wantCode: 2, wantErr: []string{"flotilla cluster label: takes a cluster name and at least one label change (key=value, or key- to remove), got 1 arguments: c1"}},
		{name: "cluster alone lists its subcommands", args: []string{"cluster"}, wantCode: 2, wantErr: []string{"flotilla cluster needs a subcommand: add, label, remove, resume, rotate, show, suspend, token"}},
		{name: "cluster with an unknown subcommand", args: []string{"cluster", "list"}, wantCode: 2, wantErr: []string{`flotilla cluster has no subcommand "list"; want one of: add, label, remove, resume, rotate, show, suspend, token`}},
		{name: "status takes one release", args: []string{"status", "a", "b"}, wantCode: 2, wantErr: []string{"flotilla status: takes at most one release name, got 2 arguments: a b"}},
		{name: "drift takes no arguments", args: []string{"drift", "web"}, wantCode: 2, wantErr: []string{`flotilla drift: takes no arguments, got "web" (usage: flotilla drift`}},
		{name: "agent needs a state dir", args: []string{"agent", "--hub", "https://127.0.0.1:1"}, wantCode: 2, wantErr: []string{"--state-dir is required"}},
		{name: "cluster label needs key=value", args: []string{"cluster", "label", "c1", "novalue", "--hub", "https://127.0.0.1:1", "--token", "t"}, wantCode: 2, wantErr: []string{`label "novalue": want key=value, or key- to remove`}},
		{name: "a plain-HTTP hub URL is refused", args: []string{"status", "--hub", "http://user:s3cret@127.0.0.1:1", "--token", "t"}, wantCode: 2,
			wantErr: []string{"hub URL http://user:xxxxx@127.0.0.1:1 is plain HTTP: the token would travel in clear text; use https://, or pass --insecure to accept it"}},
		{name: "--insecure accepts a plain-HTTP hub URL", args: []string{"status", "--hub", "http://127.0.0.1:1", "--token", "t", "--insecure"}, wantCode: 1, wantErr: []string{"127.0.0.1:1"}},
		{name: "cluster rotate needs a cluster name", args: []string{"cluster", "rotate"}, wantCode: 2, wantErr: []string{"flotilla cluster rotate: needs a cluster name (usage: flotilla cluster rotate NAME"}},
		{name: "audit help has examples", args: []string{"audit", "--help"}, wantOut: []string{"flotilla audit --since 1h", "flotilla audit verify", "--cluster", "jsonl"}},
		{name: "audit verify help", args: []string{"audit", "verify", "--help"}, wantOut: []string{"flotilla audit verify -o json"}},
		{name: "audit bad since", args: []string{"audit", "--since", "yesterday", "--hub", "https://127.0.0.1:1", "--token", "t"}, wantCode: 2, wantErr: []string{`--since "yesterday"`}},
		{name: "audit bad output", args: []string{"audit", "-o", "yaml"}, wantCode: 2, wantErr: []string{`want table or json or jsonl, got "yaml"`}},
		{name: "drift help says precisely what drift is", args: []string{"drift", "--help"}, wantOut: []string{"deleted by hand: it shows with the path (deleted)", "Not drift:", "kubectl label of a new key", "conflicts"}},
		{name: "unknown flag", args: []string{"version", "--bogus"}, wantCode: 2, wantErr: []string{"unknown flag: --bogus"}},
		{name: "bad output format", args: []string{"version", "-o", "yaml"}, wantCode: 2, wantErr: []string{`want text or json, got "yaml"`}},
		{name: "bad log level", args: []string{"version", "--log-level", "loud"}, wantCode: 2, wantErr: []string{`--log-level "loud"`}},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 2, wantErr: []string{`unknown command "frobnicate"`}},
		{name: "demo needs a cluster", args: []string{"demo", "--clusters", "0"}, wantCode: 2, wantErr: []string{"--clusters must be at least 1"}},
		{name: "demo without binaries", args: []string{"demo", "--bin-dir", "/nonexistent"}, wantCode: 1, wantErr: []string{"kube-apiserver binary not found", "make kube-binaries"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
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
	t.Parallel()
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
