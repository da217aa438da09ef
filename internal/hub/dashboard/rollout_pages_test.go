package dashboard

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The rollout view's files are served like the others and load nothing from elsewhere; the
// page links them.
func TestRolloutPages(t *testing.T) {
	t.Parallel()
	pages, err := Pages()
	if err != nil {
		t.Fatal(err)
	}
	get := func(p string) (int, string, string) {
		w := httptest.NewRecorder()
		pages.ServeHTTP(w, httptest.NewRequestWithContext(t.Context(), http.MethodGet, p, nil))
		var b bytes.Buffer
		_, _ = b.ReadFrom(w.Result().Body)
		return w.Code, w.Header().Get("Content-Type"), b.String()
	}
	for p, ctype := range map[string]string{"/rollout.js": "text/javascript; charset=utf-8", "/rollout.css": "text/css; charset=utf-8"} {
		code, got, body := get(p)
		if code != http.StatusOK || got != ctype {
			t.Errorf("GET %s: %d %q, want 200 %q", p, code, got, ctype)
		}
		for _, bad := range []string{"http://", "https://", "//cdn", "innerHTML", "eval("} {
			if strings.Contains(body, bad) {
				t.Errorf("%s contains %q", p, bad)
			}
		}
	}
	_, _, index := get("/")
	for _, want := range []string{`href="/rollout.css"`, `data-view="rollouts"`, `id="view-rollout"`} {
		if !strings.Contains(index, want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
}
