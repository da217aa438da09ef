package dashboard

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPages(t *testing.T) {
	t.Parallel()
	pages, err := Pages()
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method, path string, header map[string]string) served {
		r := httptest.NewRequestWithContext(t.Context(), method, path, nil)
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		pages.ServeHTTP(w, r)
		resp := w.Result()
		t.Cleanup(func() { resp.Body.Close() })
		return served{resp}
	}
	for _, tc := range []struct {
		path, wantType, wantIn string
	}{
		{"/", "text/html; charset=utf-8", `<script type="module" src="/app.js">`},
		{"/index.html", "text/html; charset=utf-8", "<title>Flotilla</title>"},
		{"/app.js", "text/javascript; charset=utf-8", "takeTokenFromFragment"},
		{"/matrix.js", "text/javascript; charset=utf-8", "PAGE_SIZE"},
		{"/app.css", "text/css; charset=utf-8", ".matrix"},
	} {
		t.Run("serves "+tc.path, func(t *testing.T) {
			resp := serve(http.MethodGet, tc.path, nil)
			body := new(bytes.Buffer)
			_, _ = body.ReadFrom(resp.Body)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.wantType || !strings.Contains(body.String(), tc.wantIn) {
				t.Errorf("GET %s: %d %q, body has %q: %v", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.wantIn, strings.Contains(body.String(), tc.wantIn))
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s: no nosniff", tc.path)
			}
			if again := serve(http.MethodGet, tc.path, map[string]string{"If-None-Match": resp.Header.Get("ETag")}); again.StatusCode != http.StatusNotModified {
				t.Errorf("GET %s with its ETag: %d, want 304", tc.path, again.StatusCode)
			}
		})
	}

	t.Run("nothing else is served", func(t *testing.T) {
		for _, p := range []string{"/static/app.js", "/favicon.ico", "/api/v1/status", "/../go.mod"} {
			if resp := serve(http.MethodGet, p, nil); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
			}
		}
		if resp := serve(http.MethodPost, "/", nil); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST /: %d, want 405", resp.StatusCode)
		}
	})

	t.Run("no file loads anything from another host", func(t *testing.T) {
		for _, p := range []string{"/", "/app.js", "/app.css", "/overview.js", "/matrix.js", "/cluster.js", "/skew.js", "/drift.js", "/audit.js", "/api.js", "/dom.js", "/filter.js", "/clusters.js", "/assignment.js"} {
			resp := serve(http.MethodGet, p, nil)
			body := new(bytes.Buffer)
			_, _ = body.ReadFrom(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d", p, resp.StatusCode)
			}
			for _, bad := range []string{"http://", "https://", "//cdn", "innerHTML", "eval("} {
				if strings.Contains(body.String(), bad) {
					t.Errorf("%s contains %q", p, bad)
				}
			}
		}
	})
}
