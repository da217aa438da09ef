package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// contentSecurityPolicy allows the page nothing but its own origin: no inline script, no
// third-party host, no framing; so even a cluster name or label value that held markup could
// not run code with the token in reach.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes are set here rather than looked up in the system's MIME tables, which differ
// between machines (a .js served as text/plain is refused under nosniff).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

type page struct {
	raw, gz     []byte
	ctype, etag string
}

// Pages serves the dashboard's files: "/" is index.html and every other file of static/ is
// served by its name; anything else is 404. They are compressed and hashed once, at start.
func Pages() (http.Handler, error) {
	pages := map[string]*page{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(raw)
		pg := &page{raw: raw, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`, ctype: contentTypes[path.Ext(p)]}
		if pg.ctype == "" {
			return fmt.Errorf("dashboard page %s: no content type for its extension", p)
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(raw)
		if err := zw.Close(); err != nil {
			return fmt.Errorf("dashboard page %s: %w", p, err)
		}
		pg.gz = buf.Bytes()
		pages["/"+strings.TrimPrefix(p, "static/")] = pg
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard pages: %w", err)
	}
	pages["/"] = pages["/index.html"]
	if pages["/"] == nil {
		return nil, fmt.Errorf("dashboard pages: no index.html embedded")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pg := pages[r.URL.Path]
		if pg == nil {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		// Revalidate every time (a 304 costs a round trip, no body), so a hub upgrade never
		// leaves a browser with an old page against a new API.
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", pg.etag)
		h.Set("Vary", "Accept-Encoding")
		if etagMatches(r.Header.Get("If-None-Match"), pg.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", pg.ctype)
		body := pg.raw
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.Set("Content-Encoding", "gzip")
			body = pg.gz
		}
		h.Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	}), nil
}
