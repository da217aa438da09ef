package dashboard

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// served is a recorded response whose body get closes when the test ends.
type served struct{ *http.Response }

func get(t *testing.T, h http.Handler, etag string, gzipped bool) served {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/dashboard/fleet", nil)
	if etag != "" {
		r.Header.Set("If-None-Match", etag)
	}
	if gzipped {
		r.Header.Set("Accept-Encoding", "gzip, deflate, br")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	resp := w.Result()
	t.Cleanup(func() { resp.Body.Close() })
	return served{resp}
}

func body(t *testing.T, resp served) string {
	t.Helper()
	rd := resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(rd)
		if err != nil {
			t.Fatal(err)
		}
		rd = zr
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSnapshots(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Unix(1000, 0)}
	var mu sync.Mutex
	calls, value := 0, "one"
	set := func(v string) { mu.Lock(); value = v; mu.Unlock() }
	s := NewSnapshots(func(context.Context) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return map[string]string{"v": value}, nil
	}, SnapshotOptions{MinInterval: time.Second, MaxAge: 10 * time.Second, Now: clock.now})
	computed := func() int { mu.Lock(); defer mu.Unlock(); return calls }

	first := get(t, s, "", true)
	if first.StatusCode != http.StatusOK || body(t, first) != `{"v":"one"}` {
		t.Fatalf("first GET: %d", first.StatusCode)
	}
	etag := first.Header.Get("ETag")
	if etag == "" || first.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("first GET: ETag %q, Content-Encoding %q", etag, first.Header.Get("Content-Encoding"))
	}

	t.Run("an unchanged document is a 304 without a body", func(t *testing.T) {
		resp := get(t, s, etag, true)
		if resp.StatusCode != http.StatusNotModified || body(t, resp) != "" {
			t.Errorf("got %d with a body", resp.StatusCode)
		}
	})

	t.Run("a client without gzip gets plain JSON", func(t *testing.T) {
		resp := get(t, s, "", false)
		if resp.Header.Get("Content-Encoding") != "" || body(t, resp) != `{"v":"one"}` {
			t.Errorf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
	})

	t.Run("without a change notice the document is kept until MaxAge", func(t *testing.T) {
		before := computed()
		set("two")
		clock.add(5 * time.Second)
		if resp := get(t, s, etag, true); resp.StatusCode != http.StatusNotModified {
			t.Errorf("got %d, want 304 from the cache", resp.StatusCode)
		}
		clock.add(6 * time.Second)
		resp := get(t, s, etag, true)
		if resp.StatusCode != http.StatusOK || body(t, resp) != `{"v":"two"}` {
			t.Errorf("after MaxAge: got %d", resp.StatusCode)
		}
		if computed() != before+1 {
			t.Errorf("computed %d times, want once", computed()-before)
		}
		etag = resp.Header.Get("ETag")
	})

	t.Run("a change notice is seen at most once per MinInterval", func(t *testing.T) {
		set("three")
		s.Changed()
		clock.add(200 * time.Millisecond)
		if resp := get(t, s, etag, true); resp.StatusCode != http.StatusNotModified {
			t.Errorf("within MinInterval: got %d, want 304", resp.StatusCode)
		}
		clock.add(time.Second)
		resp := get(t, s, etag, true)
		if resp.StatusCode != http.StatusOK || body(t, resp) != `{"v":"three"}` {
			t.Errorf("after MinInterval: got %d", resp.StatusCode)
		}
		etag = resp.Header.Get("ETag")
	})

	t.Run("concurrent requests share one computation", func(t *testing.T) {
		s.Changed()
		clock.add(2 * time.Second)
		before := computed()
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() { defer wg.Done(); get(t, s, etag, true) }()
		}
		wg.Wait()
		if n := computed() - before; n != 1 {
			t.Errorf("computed %d times for 8 requests, want 1", n)
		}
	})

	t.Run("a costly computation spaces the next ones out", func(t *testing.T) {
		slow := NewSnapshots(func(context.Context) (any, error) {
			clock.add(time.Second) // the computation takes a second
			mu.Lock()
			defer mu.Unlock()
			calls++
			return map[string]string{"v": value}, nil
		}, SnapshotOptions{MinInterval: time.Second, MaxBusy: 0.2, MaxAge: time.Minute, Now: clock.now})
		get(t, slow, "", true)
		before := computed()
		slow.Changed()
		clock.add(3 * time.Second)
		get(t, slow, "", true)
		if computed() != before {
			t.Errorf("recomputed 4s after a computation of 1s; MaxBusy 0.2 asks for 5s between them")
		}
		clock.add(2 * time.Second)
		get(t, slow, "", true)
		if computed() != before+1 {
			t.Errorf("not recomputed 6s after a computation of 1s with a change announced")
		}
	})

	t.Run("a failed computation is a 500 and not cached", func(t *testing.T) {
		fail := NewSnapshots(func(context.Context) (any, error) { return nil, errors.New("store: closed") }, SnapshotOptions{Now: clock.now})
		resp := get(t, fail, "", true)
		if resp.StatusCode != http.StatusInternalServerError || body(t, resp) != "{\"error\":\"store: closed\"}\n" {
			t.Errorf("got %d", resp.StatusCode)
		}
	})
}

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]bool{
		"":                    false,
		"gzip":                true,
		"deflate, gzip;q=0.5": true,
		"gzip;q=0":            false,
		"br, *":               true,
		"identity":            false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}
