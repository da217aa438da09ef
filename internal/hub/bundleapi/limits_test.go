package bundleapi

import (
	"archive/tar"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/bundle"
)

// A reports file over the bound is refused with 413 before anything of it is checked or
// stored (the store is not even needed): by its Content-Length, or while it streams.
func TestImportReportsBound(t *testing.T) {
	t.Parallel()
	a := New(Deps{ReportsLimits: bundle.ReportsLimits{MaxBytes: 4096}})
	var big bytes.Buffer
	tw := tar.NewWriter(&big)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "manifest.json", Size: 8000, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bytes.Repeat([]byte(" "), 8000)); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	for _, tc := range []struct {
		name   string
		body   io.Reader
		length int64
		code   int
		want   string
	}{
		{"over the bound by its length", strings.NewReader(strings.Repeat("x", 10_000)), 10_000, http.StatusRequestEntityTooLarge, "10000 bytes; at most 4096"},
		{"over the bound while it streams", &big, -1, http.StatusRequestEntityTooLarge, "larger than 4096 bytes"},
		{"under the bound but not a reports file", strings.NewReader(strings.Repeat("x", 100)), 100, http.StatusBadRequest, "reports file: not a valid archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/v1/reports/import", tc.body)
			r.ContentLength = tc.length
			a.importReports(w, r)
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("answer %d %s; want %d with %q", w.Code, w.Body.String(), tc.code, tc.want)
			}
		})
	}
}
