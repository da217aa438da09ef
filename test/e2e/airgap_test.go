package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/bundle"
	"github.com/flotilla/flotilla/internal/cli"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pki"
)

// TestAirGappedRoundTrip: an agent that joined its hub loses every network path to it (it is
// restarted with a hub address that nothing answers). New revisions still reach its real
// cluster by bundle, imported once with the agent stopped and once while it runs; its
// reports reach the hub by file and are ingested once however often the file is imported;
// the next bundle lets the agent drop them from its outbox. An older bundle (a replay), a
// bundle with one byte of an artifact changed and one signed by another hub's CA are refused
// with their reasons, and change nothing.
func TestAirGappedRoundTrip(t *testing.T) {
	t.Parallel()
	srcDir, fleetDir := t.TempDir(), t.TempDir()
	src := newRepo(t, srcDir, map[string]string{"web/web.yaml": hookConfigMap("v1")})
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": fmt.Sprintf(webFleet, srcDir)})
	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{"ag-1": {"site": "ship"}})
	one := map[string][]string{"ag-1": {"web"}}
	f.waitStatus("v1 applied online", 2*time.Minute, converged("", one))

	work := t.TempDir()
	stateDir := filepath.Join(f.dir, "agents", "ag-1")
	conn := []string{"--hub", f.hub.APIURL(), "--token", f.hub.AdminToken(), "--ca", f.hub.CAPath()}
	// flotilla runs the CLI in this process and returns its exit code and output.
	flotilla := func(args ...string) (int, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := cli.Run(t.Context(), args, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	must := func(args ...string) string {
		t.Helper()
		code, out := flotilla(args...)
		if code != 0 {
			t.Fatalf("flotilla %s: exit %d:\n%s", strings.Join(args, " "), code, out)
		}
		return out
	}
	export := func(name string) string {
		t.Helper()
		path := filepath.Join(work, name)
		must(append([]string{"bundle", "export", "--cluster", "ag-1", "-o", path}, conn...)...)
		return path
	}
	version := func() string {
		v, _ := configMapData(t, f.clusters["ag-1"], "web", "web", "version")
		return v
	}
	desiredAt := func(commit string) func(hubclient.StatusView) bool {
		return func(st hubclient.StatusView) bool {
			return len(st.Assignments) == 1 && containsCommit(st.Assignments[0].DesiredRevision, commit)
		}
	}
	old := export("v1.bundle") // what the site has now: replayed later, it must be refused

	// The network path goes: the agent runs from now on with a hub address nothing answers.
	f.stopAgent("ag-1")
	dead := "https://" + freeAddr(t)
	startOffline := func() func() {
		a, err := agent.New(t.Context(), agent.Options{
			HubURL: dead, RESTConfig: f.clusters["ag-1"].RESTConfig(), StateDir: stateDir, Logger: f.logger("agent-ag-1-offline"),
			HeartbeatInterval: time.Second, ReportInterval: 200 * time.Millisecond, MaxBackoff: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := a.Run(ctx); err != nil {
				t.Errorf("agent: %v", err)
			}
			a.Close()
		}()
		return func() { cancel(); <-done }
	}

	// v2, imported with the agent stopped: it reconciles it at its next start.
	v2 := src.commit("web v2", map[string]string{"web/web.yaml": hookConfigMap("v2")})
	f.waitStatus("the hub schedules v2", time.Minute, desiredAt(v2))
	b2 := export("v2.bundle")
	out := must("agent", "import", b2, "--state-dir", stateDir)
	if !strings.Contains(out, "imported") || !strings.Contains(out, `cluster "ag-1"`) {
		t.Errorf("import with the agent stopped said:\n%s", out)
	}
	stop := startOffline()
	defer func() { stop() }()
	eventually.Within(t, time.Minute, equal("web's version applied from the bundle, with no hub", version, "v2"))

	// v3, imported while the agent runs.
	v3 := src.commit("web v3", map[string]string{"web/web.yaml": hookConfigMap("v3")})
	f.waitStatus("the hub schedules v3", time.Minute, desiredAt(v3))
	b3 := export("v3.bundle")
	out = must("agent", "import", b3, "--state-dir", stateDir, "-o", "json")
	var res agent.ImportResult
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &res); err != nil || res.Status != agent.ImportImported || res.Previous == 0 || res.Generation <= res.Previous {
		t.Fatalf("import while running: %+v (%v)\n%s", res, err, out)
	}
	eventually.Within(t, time.Minute, equal("web's version applied from the bundle, with no hub", version, "v3"))
	if out := must("agent", "import", b3, "--state-dir", stateDir); !strings.Contains(out, "already in force") {
		t.Errorf("the same bundle again: %s; want it said to be in force already", out)
	}

	// Refusals: each exits 1 with its reason, and v3 stays.
	caDir := t.TempDir()
	other, err := pki.LoadOrCreateCA(caDir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(work, "tampered.bundle")
	data, err := os.ReadFile(b3)
	if err != nil {
		t.Fatal(err)
	}
	// The last artifact's bytes end 1024 bytes (the archive's end) plus padding before the
	// file's end; its first byte is the gzip magic, right after its 512-byte header.
	m := readManifest(t, b3, f.hub.CAPath())
	last := m.Artifacts[len(m.Artifacts)-1]
	at := bytes.LastIndex(data, []byte("sha256-"+strings.TrimPrefix(last.Digest, "sha256:")+".tar.gz"))
	data[at+512+int(last.Size)/2] ^= 0x01 // a byte in the middle of the artifact, past its header block
	if err := os.WriteFile(tampered, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"an older bundle (a replay)", old, "older than the desired state this agent has"},
		{"one byte of an artifact changed", tampered, "digest mismatch"},
		{"signed by another hub's CA", resignedBundle(t, b3, f.hub.CAPath(), other, work), "not by the hub CA this agent trusts"},
	} {
		code, out := flotilla("agent", "import", tc.file, "--state-dir", stateDir)
		if code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, output:\n%s\nwant exit 1 and %q", tc.name, code, out, tc.want)
		}
	}
	if v := version(); v != "v3" {
		t.Fatalf("after the refused bundles web's version is %q, want v3", v)
	}

	// Reports back: exported while the agent runs, once they include v3 Ready.
	reports := filepath.Join(work, "reports.tar")
	var rf *bundle.Reports
	eventually.Within(t, time.Minute, eventually.True("a v3 Ready report in the outbox", func() bool {
		must("agent", "export-reports", "--state-dir", stateDir, "-o", reports)
		rf = readReports(t, reports)
		for _, r := range rf.Reports {
			for _, st := range r.Statuses {
				if st.Phase == "Ready" && containsCommit(st.Revision, v3) {
					return true
				}
			}
		}
		return false
	}))
	var imp hubclient.ReportsImport
	if err := json.Unmarshal([]byte(must(append([]string{"hub", "import-reports", reports, "-o", "json"}, conn...)...)), &imp); err != nil {
		t.Fatal(err)
	}
	if imp.Cluster != "ag-1" || imp.Ingested != len(rf.Reports) || imp.Duplicates != 0 || imp.IngestedThrough != rf.Manifest.LastSeq {
		t.Errorf("first import: %+v; want all %d reports ingested, through seq %d", imp, len(rf.Reports), rf.Manifest.LastSeq)
	}
	f.waitStatus("status shows v3 Ready on ag-1 from the imported reports", 5*time.Second, converged(v3, one))
	if out := must(append([]string{"status", "--cluster", "ag-1"}, conn...)...); !strings.Contains(out, "Ready") || !strings.Contains(out, v3[:12]) {
		t.Errorf("flotilla status --cluster ag-1:\n%s\nwant web Ready at %.12s", out, v3)
	}
	out = must(append([]string{"hub", "import-reports", reports}, conn...)...)
	if !strings.Contains(out, "0 ingested now, "+fmt.Sprint(len(rf.Reports))+" already ingested") {
		t.Errorf("second import of the same file:\n%s\nwant nothing ingested", out)
	}
	audit := must(append([]string{"audit", "--action", "reports.imported", "-o", "json"}, conn...)...)
	if strings.Count(audit, `"reports.imported"`) != 2 {
		t.Errorf("audit has %d reports.imported records, want 2:\n%s", strings.Count(audit, `"reports.imported"`), audit)
	}

	// The next bundle says what the hub has: the agent drops it from its outbox.
	b4 := export("v3-acked.bundle")
	out = must("agent", "import", b4, "--state-dir", stateDir, "-o", "json")
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &res); err != nil || res.Status != agent.ImportAlready || res.OutboxDropped < len(rf.Reports) {
		t.Errorf("import of the bundle after the reports: %+v (%v); want already-imported with at least %d reports dropped", res, err, len(rf.Reports))
	}
	must("agent", "export-reports", "--state-dir", stateDir, "-o", reports)
	if next := readReports(t, reports); next.Manifest.Count > 0 && next.Manifest.FirstSeq <= rf.Manifest.LastSeq {
		t.Errorf("after the acknowledging bundle the outbox starts at seq %d; want after %d", next.Manifest.FirstSeq, rf.Manifest.LastSeq)
	}
}

func readManifest(t *testing.T, path, caPath string) bundle.Manifest {
	t.Helper()
	b := readBundle(t, path, caPath, "")
	return b.Manifest
}

func readBundle(t *testing.T, path, caPath, artifactDir string) *bundle.Bundle {
	t.Helper()
	caPEM, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(caPEM)
	if block == nil {
		t.Fatalf("%s: not PEM", caPath)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	b, err := bundle.Read(t.Context(), file, bundle.ReadOptions{CA: ca, ArtifactDir: artifactDir})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// resignedBundle writes the bundle at path again, unchanged but signed by other: what a
// second hub, or a stolen CA other than the agent's, would produce.
func resignedBundle(t *testing.T, path, caPath string, other *pki.CA, work string) string {
	t.Helper()
	dir := filepath.Join(work, "resign")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b := readBundle(t, path, caPath, dir)
	out := filepath.Join(work, "other-ca.bundle")
	file, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	_, err = bundle.Write(t.Context(), file, bundle.WriteOptions{
		Desired: b.Desired, CreatedAt: time.Now(), CA: other.Certificate(), Signer: other.Signer(),
		Open: func(_ context.Context, digest string) (io.ReadCloser, int64, error) {
			f, err := os.Open(b.Artifacts[digest])
			if err != nil {
				return nil, 0, err
			}
			st, err := f.Stat()
			return f, st.Size(), err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readReports(t *testing.T, path string) *bundle.Reports {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	rf, err := bundle.ReadReports(file, bundle.ReportsLimits{})
	if err != nil {
		t.Fatal(err)
	}
	return rf
}
