package helmchart

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
)

// countingListener is a TCP listener on 127.0.0.1 that counts the connections made to it.
func countingListener(t *testing.T) (addr string, count func() int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return l.Addr().String(), n.Load
}

// TestDependencyHosts: a dependency on a host the source does not allow (its repository's own
// host and port, or spec.helm.dependencyHosts) fails the source, naming the dependency, the
// host and what is allowed, before anything dials it: the listener it names counts no
// connection. The cloud metadata address is refused the same way, and so is a dependency's
// own dependency on such a host.
func TestDependencyHosts(t *testing.T) {
	t.Parallel()
	addr, dials := countingListener(t)
	for _, tc := range []struct {
		name  string
		repo  string
		hosts []string // the source's dependencyHosts; nil: its own host only
		host  string   // the host the error names
	}{
		{name: "https, own host only", repo: "https://" + addr + "/charts", host: addr},
		{name: "oci, own host only", repo: "oci://" + addr + "/charts", host: addr},
		{name: "another port of an allowed host", repo: "https://" + addr + "/charts", hosts: []string{"127.0.0.1:1"}, host: addr},
		{name: "the metadata address", repo: "http://169.254.169.254/latest/meta-data", hosts: []string{"*.example.com"}, host: "169.254.169.254"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newDepFixture(t, func(c *chart.Chart) { c.Lock.Dependencies[0].Repository = tc.repo })
			fx.source.Spec.Helm.DependencyHosts = tc.hosts
			dst := t.TempDir()
			_, err := fx.fetcher(Options{}).Fetch(t.Context(), fx.source, "", dst)
			allowed := "its own host " + hostOf(fx.main.URL)
			if len(tc.hosts) > 0 {
				allowed += " and " + strings.Join(tc.hosts, ", ")
			}
			want := "source 'charts': helm repository " + fx.main.URL + " chart app version 1.0.0: dependency lib: repository " + tc.repo +
				" is on host " + tc.host + ", and the source allows dependencies from " + allowed + " only (spec.helm.dependencyHosts)"
			if err == nil || err.Error() != want {
				t.Fatalf("error %v\nwant %s", err, want)
			}
			if files := listFiles(t, dst); len(files) != 0 {
				t.Fatalf("failed fetch left %v", files)
			}
		})
	}
	// A dependency's own dependencies are bound by the same hosts: lib, from a host the source
	// allows, is written by whoever publishes it, and names a repository on a host it does not.
	t.Run("a dependency's dependency on another host", func(t *testing.T) {
		fx := newDepFixture(t, func(c *chart.Chart) { c.Lock.Dependencies[0].Version = "1.9.0" })
		fx.other.add(t, newChart("lib", "1.9.0", 1, &chart.Dependency{Name: "base", Version: "0.1.0", Repository: "https://" + addr + "/charts"}), "")
		dst := t.TempDir()
		_, err := fx.fetcher(Options{}).Fetch(t.Context(), fx.source, "", dst)
		want := "source 'charts': helm repository " + fx.main.URL + " chart app version 1.0.0: dependency lib version 1.9.0 (repository " + fx.other.URL +
			"): dependency base: repository https://" + addr + "/charts is on host " + addr + ", and the source allows dependencies from its own host " +
			hostOf(fx.main.URL) + " and " + strings.Join(fx.source.Spec.Helm.DependencyHosts, ", ") + " only (spec.helm.dependencyHosts)"
		if err == nil || err.Error() != want {
			t.Fatalf("error %v\nwant %s", err, want)
		}
		if files := listFiles(t, dst); len(files) != 0 {
			t.Fatalf("failed fetch left %v", files)
		}
	})
	if n := dials(); n != 0 {
		t.Fatalf("the listener counted %d connections, want none: the hub dialled before refusing", n)
	}
}
