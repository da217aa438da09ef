package localcluster_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
)

func TestTwoClustersInParallel(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clusters, err := localcluster.StartAll(ctx, []localcluster.Options{{Name: "east"}, {Name: "west"}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			if err := localcluster.StopAll(clusters); err != nil {
				t.Error(err)
			}
		}
	})

	type leftover struct {
		pids  []int
		ports []int
		dir   string
	}
	var left []leftover
	for _, c := range clusters {
		// Through the kubeconfig file, as a user or another program would connect.
		cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
		if err != nil {
			t.Fatalf("%s: load kubeconfig: %v", c.Name(), err)
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		cm := corev1ac.ConfigMap("greeting", "default").WithData(map[string]string{"cluster": c.Name()})
		if _, err := cs.CoreV1().ConfigMaps("default").Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "flotilla-test"}); err != nil {
			t.Fatalf("%s: server-side apply: %v", c.Name(), err)
		}
		got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "greeting", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: read back: %v", c.Name(), err)
		}
		if got.Data["cluster"] != c.Name() {
			t.Errorf("%s: data = %v, want cluster=%s", c.Name(), got.Data, c.Name())
		}
		if m := got.ManagedFields; len(m) != 1 || m[0].Manager != "flotilla-test" || m[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("%s: managed fields = %+v, want one Apply entry by flotilla-test", c.Name(), m)
		}
		left = append(left, leftover{pids: []int{c.Etcd().PID(), c.APIServer().PID()}, ports: c.Ports(), dir: c.Dir()})
	}
	if left[0].ports[2] == left[1].ports[2] {
		t.Fatalf("both clusters serve on port %d", left[0].ports[2])
	}

	if err := localcluster.StopAll(clusters); err != nil {
		t.Fatal(err)
	}
	stopped = true
	for _, l := range left {
		for _, pid := range l.pids {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d still exists after Stop (kill -0: %v)", pid, err)
			}
		}
		for _, port := range l.ports {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				t.Errorf("port %d not free after Stop: %v", port, err)
				continue
			}
			ln.Close()
		}
		if _, err := os.Stat(l.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("data directory %s left behind (stat: %v)", l.dir, err)
		}
	}
}

func TestMissingBinaryIsAClearError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		present []string // executables placed in the bin dir
		missing string
	}{
		{name: "empty bin dir", missing: "kube-apiserver"},
		{name: "etcd missing", present: []string{"kube-apiserver"}, missing: "etcd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			binDir := t.TempDir()
			for _, name := range tt.present {
				if err := os.WriteFile(filepath.Join(binDir, name), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir})
			if err == nil {
				if err := c.Stop(); err != nil {
					t.Fatal(err)
				}
				t.Fatal("Start succeeded without binaries")
			}
			if !errors.Is(err, localcluster.ErrBinaryNotFound) {
				t.Errorf("error %q does not wrap ErrBinaryNotFound", err)
			}
			for _, want := range []string{tt.missing + " binary not found", binDir, "make kube-binaries"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestNotReadyWhenEtcdFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fail  func(t *testing.T, c *localcluster.Cluster)
		wants string
	}{
		{
			name:  "etcd killed",
			fail:  func(t *testing.T, c *localcluster.Cluster) { c.Etcd().Kill() },
			wants: "etcd exited",
		},
		{
			// A hung etcd: the process is there but answers nothing, as on a frozen disk.
			name: "etcd frozen",
			fail: func(t *testing.T, c *localcluster.Cluster) {
				pid := c.Etcd().PID()
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) // fails only if it has already exited
			},
			wants: "etcd",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := clustertest.Start(t, localcluster.Options{Name: strings.ReplaceAll(tt.name, " ", "-")})
			if err := c.Ready(t.Context()); err != nil {
				t.Fatalf("not ready before the fault: %v", err)
			}
			tt.fail(t, c)
			// A functional bound, not a speed target: the etcd health check inside
			// kube-apiserver times out after 2s and Ready's own request after 5s.
			var notReady error
			eventually.Within(t, 30*time.Second, func() error {
				if notReady = c.Ready(t.Context()); notReady == nil {
					return errors.New("cluster still reported ready after etcd failed")
				}
				return nil
			})
			t.Logf("reported not ready: %v", notReady)
			if !strings.Contains(notReady.Error(), tt.wants) {
				t.Errorf("not-ready error %q does not mention %q", notReady, tt.wants)
			}
		})
	}
}

func TestRestartAPIServer(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, localcluster.Options{Name: "restart"})
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	cm := corev1ac.ConfigMap("kept", "default").WithData(map[string]string{"k": "v"})
	if _, err := cs.CoreV1().ConfigMaps("default").Apply(t.Context(), cm, metav1.ApplyOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartAPIServer(t.Context()); err == nil {
		t.Fatal("restarting a running API server succeeded")
	}
	c.APIServer().Kill()
	if err := c.Ready(t.Context()); err == nil {
		t.Fatal("ready with the API server killed")
	}
	if err := c.RestartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ConfigMaps("default").Get(t.Context(), "kept", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Errorf("after restart: %v, %v; want the object applied before", got, err)
	}
}
