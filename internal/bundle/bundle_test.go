package bundle

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

var testNow = time.Date(2031, time.March, 14, 15, 9, 26, 0, time.UTC)

// fixture is a real CA and real artifacts in a real artifact store.
type fixture struct {
	ca      *pki.CA
	store   *artifact.Store
	desired desired.State
}

func newCA(t testing.TB) *pki.CA {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), testNow)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// putTree packs a tree of files into the store and returns its digest.
func putTree(t *testing.T, st *artifact.Store, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, _, err := st.PutDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := artifact.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	app := putTree(t, st, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"})
	values := putTree(t, st, map[string]string{"values/prod.yaml": "replicas: 3\n"})
	ds := desired.State{Cluster: "edge-1", Generation: 7, ExplicitRemovals: true, Document: desired.Document{Assignments: []desired.Assignment{
		{Release: "web", Digest: app, Revision: "main@abc", Path: "app", Vars: map[string]string{}},
		{Release: "chart", Digest: app, Revision: "main@abc", Path: "app", Vars: map[string]string{}, Helm: &desired.Helm{
			ValuesFiles: []desired.FileRef{{Source: "values", Digest: values, Path: "values/prod.yaml"}},
		}},
	}}}
	return &fixture{ca: newCA(t), store: st, desired: ds}
}

func (f *fixture) open(_ context.Context, digest string) (io.ReadCloser, int64, error) {
	file, err := f.store.Open(digest)
	if err != nil {
		return nil, 0, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, 0, err
	}
	return file, st.Size(), nil
}

func (f *fixture) write(t *testing.T, ds desired.State, ca *pki.CA) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Write(context.Background(), &buf, WriteOptions{
		Desired: ds, CreatedAt: testNow, ReportsIngestedThrough: 41, CA: ca.Certificate(), Signer: ca.Signer(), Open: f.open,
	}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var progress []int64
	var buf bytes.Buffer
	m, err := Write(context.Background(), &buf, WriteOptions{
		Desired: f.desired, CreatedAt: testNow, ReportsIngestedThrough: 41, CA: f.ca.Certificate(), Signer: f.ca.Signer(), Open: f.open,
		Progress: func(written, total int64) { progress = append(progress, written) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Artifacts) != 2 || len(progress) != 2 {
		t.Fatalf("manifest artifacts %d, progress calls %d; want 2 each (the app's artifact once, the values file's)", len(m.Artifacts), len(progress))
	}
	dir := t.TempDir()
	b, err := Read(context.Background(), bytes.NewReader(buf.Bytes()), ReadOptions{CA: f.ca.Certificate(), Cluster: "edge-1", ArtifactDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f.desired, b.Desired); diff != "" {
		t.Errorf("desired state read back differs (-want +got):\n%s", diff)
	}
	if b.Manifest.Generation != 7 || b.Manifest.ReportsIngestedThrough != 41 || !b.Manifest.CreatedAt.Equal(testNow) {
		t.Errorf("manifest = %+v", b.Manifest)
	}
	for _, d := range NeededDigests(f.desired.Assignments) {
		if err := artifact.VerifyFile(b.Artifacts[d], d); err != nil {
			t.Errorf("artifact %s in the artifact dir: %v", d, err)
		}
	}
}

// entry is one tar entry of a bundle, for tampering.
type entry struct {
	hdr  tar.Header
	data []byte
}

func entries(t *testing.T, data []byte) []entry {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	var out []entry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{*hdr, body})
	}
}

func retar(t *testing.T, es []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		hdr := e.hdr
		hdr.Size = int64(len(e.data))
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// resign rewrites the manifest with edit and signs it with ca, as a hub with a bug or a
// stolen key would.
func resign(t *testing.T, es []entry, ca *pki.CA, edit func(m map[string]any)) []entry {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(es[0].data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := sign(ca.Signer(), Format, data)
	if err != nil {
		t.Fatal(err)
	}
	es[0].data, es[1].data = data, sig
	return es
}

func TestReadRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	other := newCA(t)
	good := f.write(t, f.desired, f.ca)
	tests := []struct {
		name   string
		bundle func() []byte
		opts   func(o *ReadOptions)
		want   string
	}{
		{name: "signed by another hub's CA", bundle: func() []byte { return f.write(t, f.desired, other) },
			want: "not by the hub CA this agent trusts"},
		{name: "signed by another key that claims this CA", bundle: func() []byte {
			es := entries(t, f.write(t, f.desired, other))
			return retar(t, resign(t, es, other, func(m map[string]any) { m["caFingerprint"] = f.ca.Fingerprint() }))
		}, want: "signature does not verify against the hub CA"},
		{name: "one byte of an artifact changed", bundle: func() []byte {
			es := entries(t, good)
			es[3].data[len(es[3].data)/2] ^= 1
			return retar(t, es)
		}, want: "digest mismatch"},
		{name: "generation changed in the manifest", bundle: func() []byte {
			es := entries(t, good)
			es[0].data = bytes.Replace(es[0].data, []byte(`"generation":7`), []byte(`"generation":9`), 1)
			return retar(t, es)
		}, want: "signature does not verify"},
		{name: "one byte of the desired state changed", bundle: func() []byte {
			es := entries(t, good)
			es[2].data[0] ^= 1
			return retar(t, es)
		}, want: "desired.pb does not match the manifest"},
		{name: "for another cluster", bundle: func() []byte { return good },
			opts: func(o *ReadOptions) { o.Cluster = "edge-2" }, want: `bundle of cluster "edge-1" generation 7: this agent is cluster "edge-2"`},
		{name: "an artifact left out", bundle: func() []byte { return retar(t, entries(t, good)[:4]) },
			want: "ends before artifacts/sha256-"},
		{name: "an entry added", bundle: func() []byte {
			es := entries(t, good)
			return retar(t, append(es, entry{tar.Header{Typeflag: tar.TypeReg, Name: "extra.yaml", Mode: 0o644}, []byte("x")}))
		}, want: `unexpected entry "extra.yaml"`},
		{name: "artifacts out of order", bundle: func() []byte {
			es := entries(t, good)
			es[3], es[4] = es[4], es[3]
			return retar(t, es)
		}, want: "where artifacts/sha256-"},
		{name: "a symlink in place of an artifact", bundle: func() []byte {
			es := entries(t, good)
			es[3] = entry{tar.Header{Typeflag: tar.TypeSymlink, Name: es[3].hdr.Name, Linkname: "/etc/passwd"}, nil}
			return retar(t, es)
		}, want: "is not a regular file"},
		{name: "data after the archive", bundle: func() []byte { return append(bytes.Clone(good), "trailing"...) },
			want: "data after the end of the archive"},
		{name: "not a bundle at all", bundle: func() []byte { return []byte(strings.Repeat("not a tar ", 100)) },
			want: "bundle: not a valid archive (want manifest.json)"},
		{name: "empty file", bundle: func() []byte { return nil }, want: "bundle: ends before manifest.json"},
		{name: "larger than the bound", bundle: func() []byte { return good },
			opts: func(o *ReadOptions) { o.Limits.MaxBytes = int64(len(good)) / 2 }, want: "larger than"},
		{name: "more artifacts than the bound", bundle: func() []byte { return good },
			opts: func(o *ReadOptions) { o.Limits.MaxArtifacts = 1 }, want: "2 artifacts; at most 1"},
		{name: "an artifact over the bound", bundle: func() []byte { return good },
			opts: func(o *ReadOptions) { o.Limits.MaxArtifactBytes = 10 }, want: "bytes; at most 10"},
		{name: "a desired state over the bound", bundle: func() []byte { return good },
			opts: func(o *ReadOptions) { o.Limits.MaxDesiredBytes = 10 }, want: "desired state is"},
		{name: "unknown manifest field, even signed", bundle: func() []byte {
			return retar(t, resign(t, entries(t, good), f.ca, func(m map[string]any) { m["rollback"] = true }))
		}, want: `manifest: json: unknown field "rollback"`},
		{name: "another format, even signed", bundle: func() []byte {
			return retar(t, resign(t, entries(t, good), f.ca, func(m map[string]any) { m["format"] = "flotilla.dev/bundle/v9" }))
		}, want: `format "flotilla.dev/bundle/v9"`},
		{name: "a needed artifact left out of a signed manifest", bundle: func() []byte {
			es := entries(t, good)
			es = resign(t, es, f.ca, func(m map[string]any) {
				arts := m["artifacts"].([]any)
				m["artifacts"] = arts[:1]
			})
			return retar(t, append(es[:3], es[3]))
		}, want: "which the bundle lacks"},
		{name: "an artifact the desired state does not need, even signed", bundle: func() []byte {
			es := entries(t, good)
			es = resign(t, es, f.ca, func(m map[string]any) {
				m["artifacts"] = append(m["artifacts"].([]any), map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32), "size": 1})
			})
			return retar(t, es)
		}, want: "is not one the desired state needs"},
		{name: "Helm values that are not JSON, even signed", bundle: func() []byte {
			es := entries(t, good)
			msg := &agentv1.DesiredState{}
			if err := proto.Unmarshal(es[2].data, msg); err != nil {
				t.Fatal(err)
			}
			msg.Assignments[1].Helm.ValuesJson = []byte(`{"replicas":`)
			data, err := proto.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			es[2].data = data
			return retar(t, resign(t, es, f.ca, func(m map[string]any) {
				m["desired"] = map[string]any{"sha256": digestOf(data).SHA256, "size": len(data)}
			}))
		}, want: `bundle of cluster "edge-1" generation 7: desired state generation 7 of cluster "edge-1": release "chart": helm values: unexpected EOF`},
		{name: "an artifact listed twice, even signed", bundle: func() []byte {
			es := entries(t, good)
			es = resign(t, es, f.ca, func(m map[string]any) {
				arts := m["artifacts"].([]any)
				m["artifacts"] = append(arts, arts[0])
			})
			return retar(t, append(es, es[3]))
		}, want: "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := ReadOptions{CA: f.ca.Certificate(), Cluster: "edge-1", ArtifactDir: dir}
			if tt.opts != nil {
				tt.opts(&o)
			}
			_, err := Read(context.Background(), bytes.NewReader(tt.bundle()), o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read: error %v, want one containing %q", err, tt.want)
			}
			// Nothing of a refused bundle stays behind.
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("artifact dir holds %d files after a refused bundle", len(left))
			}
		})
	}
}

func TestWriteRefusesCorruptArtifact(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := f.desired.Assignments[0].Digest
	path, err := f.store.Path(d)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Write(context.Background(), io.Discard, WriteOptions{Desired: f.desired, CA: f.ca.Certificate(), Signer: f.ca.Signer(), Open: f.open})
	if err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Fatalf("Write of a corrupt stored artifact: error %v, want a digest mismatch", err)
	}
}

func TestReadWithoutCA(t *testing.T) {
	t.Parallel()
	if _, err := Read(context.Background(), bytes.NewReader(nil), ReadOptions{}); err == nil || !strings.Contains(err.Error(), "no CA") {
		t.Fatalf("error %v, want one saying there is no CA", err)
	}
}
