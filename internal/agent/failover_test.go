package agent

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHubFailover(t *testing.T) {
	t.Parallel()
	live := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "served "+r.URL.Path) // an HTTP response: a failed write has nobody to tell
	}))
	defer live.Close()
	// An address nothing listens on: a replica that died.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "https://" + ln.Addr().String()
	ln.Close()

	fo, err := newHubFailover(live.Client().Transport, []string{dead, live.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: fo}
	// Requests name the first hub, as the agent's clients do; the transport picks the replica.
	get := func() (string, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, dead+"/x", nil)
		if err != nil {
			return "", err
		}
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if _, err := get(); err == nil {
		t.Fatal("the first request reached a hub that is down")
	}
	for i := range 3 {
		body, err := get()
		if err != nil || body != "served /x" {
			t.Fatalf("request %d after the failure: %q, %v; want it served by the live replica", i, body, err)
		}
	}
	if _, err := newHubFailover(nil, []string{"http://plain:80"}); err == nil {
		t.Error("a plain http hub URL was accepted")
	}
}
