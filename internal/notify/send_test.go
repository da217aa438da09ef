package notify

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSender(t *testing.T) {
	t.Parallel()
	fast := SenderOptions{Attempts: 4, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	tests := []struct {
		name       string
		statuses   []int // answers in turn; the last repeats
		retryAfter string
		wantErr    string
		wantTries  int
	}{
		{name: "delivered at once", statuses: []int{200}, wantTries: 1},
		{name: "5xx and 429 are retried", statuses: []int{500, 503, 204}, wantTries: 3},
		{name: "429 with Retry-After is honoured", statuses: []int{429, 200}, retryAfter: "1", wantTries: 2},
		{name: "gives up after the attempts", statuses: []int{502}, wantTries: 4, wantErr: "notification ops: receiver answered 502 Bad Gateway: nope"},
		{name: "4xx is not retried", statuses: []int{404}, wantTries: 1, wantErr: "notification ops: receiver answered 404 Not Found: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var times []time.Time
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
				}
				times = append(times, time.Now())
				st := tt.statuses[min(len(times), len(tt.statuses))-1]
				if st == 429 && tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				if st/100 != 2 {
					http.Error(w, "nope", st)
					return
				}
				w.WriteHeader(st)
			}))
			defer srv.Close()
			err := NewSender(fast).Send(t.Context(), "ops", srv.URL+"/hook", []byte(`{}`))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Fatalf("Send = %v, want %q", err, tt.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(times) != tt.wantTries {
				t.Errorf("%d tries, want %d", len(times), tt.wantTries)
			}
			if tt.retryAfter != "" && times[1].Sub(times[0]) < time.Second {
				t.Errorf("retried %v after Retry-After: 1", times[1].Sub(times[0]))
			}
		})
	}

	t.Run("connection refused is retried and the URL is not in the error", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		url := "http://" + ln.Addr().String() + "/services/T000/B000/SECRET"
		ln.Close()
		err := NewSender(fast).Send(t.Context(), "ops", url, []byte(`{}`))
		var perm *PermanentError
		if err == nil || errors.As(err, &perm) || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("Send = %v; want a retried connection error without the URL", err)
		}
	})
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		url      string
		insecure bool
		want     string
	}{
		{"https://hooks.example.com/x", false, ""},
		{"http://hooks.internal/x", true, ""},
		{"http://hooks.internal/x?token=s3cret", false, "notification ops: the URL is plain HTTP: use https://, or set insecure: true on the notification to accept it"},
		{"ftp://hooks.example.com/x", true, "notification ops: the URL is not an http:// or https:// URL"},
		{"hooks.example.com/x", false, "notification ops: the URL is not an http:// or https:// URL"},
	} {
		err := CheckURL("ops", tt.url, tt.insecure)
		var got string
		if err != nil {
			got = err.Error()
			var perm *PermanentError
			if !errors.As(err, &perm) {
				t.Errorf("CheckURL(%q): %v is not permanent: retrying cannot help", tt.url, err)
			}
		}
		if got != tt.want {
			t.Errorf("CheckURL(%q, %v) = %q, want %q", tt.url, tt.insecure, got, tt.want)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("the error shows the URL's secret: %s", got)
		}
	}
}
