package browsertest

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestScriptErrors loads, over TLS trusted by its key alone, a page that throws, rejects a
// promise, calls console.error and fetches a URL answered with 401: the first three are
// script errors, the 401 is not.
func TestScriptErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<!doctype html><title>t</title><script src="/page.js"></script><p id="done">done</p>`))
		case "/page.js":
			w.Header().Set("Content-Type", "text/javascript")
			_, _ = w.Write([]byte(`fetch('/secret'); console.error('told'); Promise.reject(new Error('rejected')); setTimeout(() => { throw new Error('thrown'); }, 0); setTimeout(() => { document.title = 'after'; }, 50);`))
		default:
			http.Error(w, "no", http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	sum := sha256.Sum256(srv.Certificate().RawSubjectPublicKeyInfo)
	ctx := Start(t, Options{TrustSPKI: []string{base64.StdEncoding.EncodeToString(sum[:])}})
	collect := ScriptErrors(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#done"))); err != nil {
		t.Fatalf("the page over TLS trusted by its SPKI hash: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.title === 'after'`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatal(err)
	}
	// The console messages reach us on another goroutine than the poll's answer: collect
	// reads up to a marker it logs, so that every message logged before is in.
	errs := collect()
	text := strings.Join(errs, "\n")
	for _, want := range []string{"told", "rejected", "thrown"} {
		if !strings.Contains(text, want) {
			t.Errorf("script errors %q: %q missing", errs, want)
		}
	}
	// Not "401" alone: the server's port may hold those digits (40131 did once).
	if strings.Contains(text, "/secret") || strings.Contains(text, "status of 401") {
		t.Errorf("a 401 answer counted as a script error: %q", errs)
	}
}

// TestUntrustedCertificate: without the server's key in TrustSPKI, the browser refuses it; the
// tests trust exactly the hub they start, not any certificate.
func TestUntrustedCertificate(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<p id=ok>reached</p>"))
	}))
	defer srv.Close()
	ctx := Start(t, Options{TrustSPKI: []string{base64.StdEncoding.EncodeToString(make([]byte, sha256.Size))}})
	err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"))
	if err == nil || !strings.Contains(err.Error(), "CERT") {
		t.Errorf("navigating to a server with an unknown certificate: %v, want a certificate error", err)
	}
}
