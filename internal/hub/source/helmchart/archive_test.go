package helmchart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
)

type tarEntry struct {
	name     string
	typeflag byte
	body     string
	link     string
}

func tgz(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link}
		if e.typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if e.typeflag == tar.TypeDir {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const chartYAML = "apiVersion: v2\nname: evil\nversion: 1.0.0\n"

// TestArchiveRefusals: what a chart never holds is refused with the entry named, through the
// whole fetch, and nothing lands outside dst.
func TestArchiveRefusals(t *testing.T) {
	t.Parallel()
	ok := tarEntry{name: "evil/Chart.yaml", typeflag: tar.TypeReg, body: chartYAML}
	for _, tc := range []struct {
		name  string
		entry tarEntry
		want  string
	}{
		{"parent directory", tarEntry{name: "evil/../../escaped.yaml", typeflag: tar.TypeReg, body: "x"}, `entry "evil/../../escaped.yaml" leads out of the archive (..): refused`},
		{"absolute path", tarEntry{name: "/tmp/escaped.yaml", typeflag: tar.TypeReg, body: "x"}, `entry "/tmp/escaped.yaml" is an absolute path: refused`},
		{"symlink", tarEntry{name: "evil/templates/link.yaml", typeflag: tar.TypeSymlink, link: "/etc/passwd"}, `entry "evil/templates/link.yaml" is a link (to "/etc/passwd"): refused`},
		{"hard link", tarEntry{name: "evil/templates/hard.yaml", typeflag: tar.TypeLink, link: "evil/Chart.yaml"}, `entry "evil/templates/hard.yaml" is a link (to "evil/Chart.yaml"): refused`},
		{"device", tarEntry{name: "evil/dev", typeflag: tar.TypeChar}, `entry "evil/dev" is not a regular file or directory (tar type '3'): refused`},
		{"fifo", tarEntry{name: "evil/fifo", typeflag: tar.TypeFifo}, `entry "evil/fifo" is not a regular file or directory (tar type '6'): refused`},
		{"second top directory", tarEntry{name: "other/x.yaml", typeflag: tar.TypeReg, body: "x"}, `entry "other/x.yaml" is outside the chart's directory "evil": refused`},
		{"duplicate", tarEntry{name: "evil/Chart.yaml", typeflag: tar.TypeReg, body: chartYAML}, `entry "Chart.yaml" appears twice: refused`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRepo(t, true, "", "")
			data := tgz(t, ok, tc.entry)
			r.addArchive(t, &chart.Metadata{Name: "evil", Version: "1.0.0", APIVersion: "v2"}, data, "evil-1.0.0.tgz", "")
			root := t.TempDir()
			dst := filepath.Join(root, "a", "b", "dst")
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := New(Options{TLS: testTLS(t, r)}).Fetch(t.Context(), helmSource(r.URL, "evil", ""), "", dst)
			want := "source 'charts': helm repository " + r.URL + " chart evil version 1.0.0: chart archive: " + tc.want
			if err == nil || err.Error() != want {
				t.Fatalf("error %v\nwant %s", err, want)
			}
			if files := listFiles(t, root); len(files) != 0 {
				t.Fatalf("refused archive left %v", files)
			}
		})
	}
}

// TestArchiveWrongChart: an archive holding another chart or version than the index says is
// refused.
func TestArchiveWrongChart(t *testing.T) {
	t.Parallel()
	r := startRepo(t, true, "", "")
	r.addArchive(t, &chart.Metadata{Name: "podinfo", Version: "1.0.0", APIVersion: "v2"}, packageChart(t, newChart("podinfo", "0.1.0", 1)), "p.tgz", "")
	r.addArchive(t, &chart.Metadata{Name: "web", Version: "1.0.0", APIVersion: "v2"}, packageChart(t, newChart("podinfo", "1.0.0", 1)), "w.tgz", "")
	f := New(Options{TLS: testTLS(t, r)})
	for chartName, want := range map[string]string{
		"podinfo": `the archive holds version "0.1.0" of the chart, not 1.0.0`,
		"web":     `the archive holds chart "podinfo", not web`,
	} {
		_, err := f.Fetch(t.Context(), helmSource(r.URL, chartName, ""), "", t.TempDir())
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", chartName, err, want)
		}
	}
}
