package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/eventually"
)

// receiver is a real HTTP audit receiver. answer decides the status of each request (counted
// from 1) from the records it holds; only a 2xx keeps them.
type receiver struct {
	t      *testing.T
	answer func(n int, recs []sinkRecord) (status int, retryAfter string)
	clock  clock.Clock // times each request's arrival; default the real clock

	mu       sync.Mutex
	requests int
	got      []sinkRecord // every record of every accepted batch, in arrival order
	times    []time.Time  // arrival of each request
	headers  []http.Header
}

func (rv *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rv.t.Errorf("receiver: %v", err)
		return
	}
	var recs []sinkRecord
	switch ct := r.Header.Get("Content-Type"); ct {
	case "application/x-ndjson":
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rec sinkRecord
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				rv.t.Errorf("receiver: line %q: %v", sc.Text(), err)
			}
			recs = append(recs, rec)
		}
	case "application/json":
		if err := json.Unmarshal(body, &recs); err != nil {
			rv.t.Errorf("receiver: body %q: %v", body, err)
		}
	default:
		rv.t.Errorf("receiver: Content-Type %q", ct)
	}
	if len(recs) > 0 {
		if first, _ := strconv.ParseInt(r.Header.Get("X-Flotilla-Audit-First-Seq"), 10, 64); first != recs[0].Seq {
			rv.t.Errorf("X-Flotilla-Audit-First-Seq %d, body starts at %d", first, recs[0].Seq)
		}
	}
	rv.mu.Lock()
	rv.requests++
	n := rv.requests
	rv.times = append(rv.times, clock.Or(rv.clock).Now())
	rv.headers = append(rv.headers, r.Header.Clone())
	rv.mu.Unlock()
	status, retryAfter := http.StatusOK, ""
	if rv.answer != nil {
		status, retryAfter = rv.answer(n, recs)
	}
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	if status/100 == 2 {
		rv.mu.Lock()
		rv.got = append(rv.got, recs...)
		rv.mu.Unlock()
	}
	w.WriteHeader(status)
}

func (rv *receiver) records() []sinkRecord {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return slices.Clone(rv.got)
}

// runSink starts s.Run and returns a function that stops it and waits.
func runSink(t *testing.T, s *Sink) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v; want context.Canceled", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// cursorAt is the condition that s has delivered through seq n.
func cursorAt(s *Sink, n int64) func() error {
	return func() error {
		if got := s.Cursor(); got != n {
			return fmt.Errorf("sink cursor %d, want %d (lag %d, %d failures)", got, n, s.Lag(), s.Failures())
		}
		return nil
	}
}

func fastSink(url string) SinkOptions {
	return SinkOptions{URL: url, BatchRecords: 4, PollInterval: 5 * time.Millisecond, MinBackoff: 2 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
}

// checkStream checks that got holds seqs 1..n exactly once each, in order, and that each
// record's prevHash is the hash of the one before: what a receiver can verify.
func checkStream(t *testing.T, got []sinkRecord, n int) {
	t.Helper()
	var seqs []int64
	for i, r := range got {
		seqs = append(seqs, r.Seq)
		if i > 0 && r.PrevHash != got[i-1].Hash {
			t.Errorf("record %d: prevHash %s is not the hash of record %d", r.Seq, r.PrevHash, got[i-1].Seq)
		}
	}
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if !slices.Equal(seqs, want) {
		t.Fatalf("received seqs %v; want 1..%d once each, in order", seqs, n)
	}
}

// TestSinkOutageAndRestart: the receiver is first down (connection refused), then answers
// 500, then takes everything; records appended meanwhile arrive after; the sink is stopped
// and the log closed and reopened (a hub restart) in the middle; every record arrives once, in
// order.
func TestSinkOutageAndRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.db")
	l, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, l, 5)

	// A port nobody listens on: connection refused until the receiver starts on it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr + "/audit"

	var mu sync.Mutex
	var reasons []string
	opts := fastSink(url)
	opts.Observe = func(a SinkAttempt) {
		mu.Lock()
		defer mu.Unlock()
		reasons = append(reasons, a.Reason)
	}
	s, err := NewSink(t.Context(), l, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := runSink(t, s)
	eventually.Within(t, 30*time.Second, func() error {
		if n := s.Failures(); n < 3 {
			return fmt.Errorf("%d refused connections, want 3", n)
		}
		return nil
	})
	if s.Cursor() != 0 || s.Lag() != 5 {
		t.Fatalf("while down: cursor %d, lag %d; want 0 and 5", s.Cursor(), s.Lag())
	}
	fill(t, l, 3) // written while the sink is down: seqs 6-8

	rv := &receiver{t: t, answer: func(n int, _ []sinkRecord) (int, string) {
		if n <= 3 {
			return http.StatusInternalServerError, ""
		}
		return http.StatusOK, ""
	}}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(rv)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	eventually.Within(t, 30*time.Second, cursorAt(s, 8))
	stop()
	mu.Lock()
	if !slices.Contains(reasons, "network") || !slices.Contains(reasons, "5xx") || !slices.Contains(reasons, "") {
		t.Errorf("attempt reasons %v; want network, 5xx and successes", reasons)
	}
	mu.Unlock()

	// The hub restarts: log closed and reopened, more records, a new sink resumes.
	l.Close()
	l, err = Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fill(t, l, 6) // seqs 9-14
	s2, err := NewSink(t.Context(), l, fastSink(url))
	if err != nil {
		t.Fatal(err)
	}
	if s2.Cursor() != 8 {
		t.Fatalf("cursor after restart = %d; want 8", s2.Cursor())
	}
	runSink(t, s2)
	eventually.Within(t, 30*time.Second, cursorAt(s2, 14))
	if s2.Lag() != 0 {
		t.Errorf("lag = %d once caught up", s2.Lag())
	}
	checkStream(t, rv.records(), 14)
	// Streaming keeps up with new records.
	fill(t, l, 2)
	eventually.Within(t, 30*time.Second, func() error {
		if n := len(rv.records()); n != 16 {
			return fmt.Errorf("receiver holds %d records, want the 16 with those appended later", n)
		}
		return nil
	})
	checkStream(t, rv.records(), 16)
	if _, err := l.Verify(t.Context()); err != nil {
		t.Errorf("the sink's cursor broke the chain: %v", err)
	}
}

// TestSinkHonoursRetryAfter: a 429 with Retry-After: 1 holds the next attempt back a
// second although the sink's own backoff is milliseconds. The sink and the receiver share a
// fake clock: the sink must still be waiting after 999ms, and sends again once the second
// is up.
func TestSinkHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	l, _ := openTest(t)
	fill(t, l, 2)
	clk := clock.NewFake(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	rv := &receiver{t: t, clock: clk, answer: func(n int, _ []sinkRecord) (int, string) {
		if n == 1 {
			return http.StatusTooManyRequests, "1"
		}
		return http.StatusOK, ""
	}}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	opts := fastSink(srv.URL)
	opts.Clock = clk
	s, err := NewSink(t.Context(), l, opts)
	if err != nil {
		t.Fatal(err)
	}
	runSink(t, s)
	// The first attempt is refused, and the sink waits on the clock for its retry.
	eventually.Within(t, 30*time.Second, func() error {
		rv.mu.Lock()
		n := rv.requests
		rv.mu.Unlock()
		if n != 1 || s.Failures() != 1 || clk.Waiters() != 1 {
			return fmt.Errorf("%d requests, %d failures, %d waiters on the clock; want 1 refused request and the sink waiting", n, s.Failures(), clk.Waiters())
		}
		return nil
	})
	// A shorter wait would fire in this Advance: its timer would leave the clock at once,
	// and the sink would come back to the clock only after a second request.
	clk.Advance(time.Second - time.Millisecond)
	rv.mu.Lock()
	n := rv.requests
	rv.mu.Unlock()
	if n != 1 || clk.Waiters() != 1 {
		t.Fatalf("999ms into a Retry-After of 1s: %d requests, %d waiters on the clock; want 1 request and the sink still waiting", n, clk.Waiters())
	}
	clk.Advance(time.Millisecond)
	eventually.Within(t, 30*time.Second, cursorAt(s, 2))
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if gap := rv.times[1].Sub(rv.times[0]); gap < time.Second {
		t.Errorf("retried %v after a Retry-After of 1s", gap)
	}
	checkStream(t, rv.got, 2)
}

// TestSinkOptions: JSON arrays, headers, batches halved on 413, records over a batch's size
// sent alone, and bad options refused.
func TestSinkOptions(t *testing.T) {
	t.Parallel()
	l, _ := openTest(t)
	fill(t, l, 9)
	rv := &receiver{t: t, answer: func(_ int, recs []sinkRecord) (int, string) {
		if len(recs) > 2 {
			return http.StatusRequestEntityTooLarge, ""
		}
		return http.StatusAccepted, ""
	}}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	opts := fastSink(srv.URL)
	opts.Format = SinkFormatJSON
	opts.BatchRecords = 8
	opts.Header = http.Header{"Authorization": {"Bearer s3cret"}}
	s, err := NewSink(t.Context(), l, opts)
	if err != nil {
		t.Fatal(err)
	}
	runSink(t, s)
	eventually.Within(t, 30*time.Second, cursorAt(s, 9))
	checkStream(t, rv.records(), 9)
	got := rv.records()
	rv.mu.Lock()
	for i, h := range rv.headers {
		if h.Get("Authorization") != "Bearer s3cret" {
			t.Errorf("request %d: Authorization %q", i+1, h.Get("Authorization"))
		}
		if h.Get("X-Flotilla-Audit-Chain") != got[0].Hash {
			t.Errorf("request %d: X-Flotilla-Audit-Chain %q; want the hash of record 1", i+1, h.Get("X-Flotilla-Audit-Chain"))
		}
	}
	rv.mu.Unlock()
	if got[0].Detail == nil || !bytes.Contains(got[0].Detail, []byte(`"phase":"Ready"`)) {
		t.Errorf("detail = %s", got[0].Detail)
	}

	for _, bad := range []SinkOptions{{URL: ""}, {URL: "ftp://x/y"}, {URL: "http:///path"}, {URL: srv.URL, Format: "xml"}} {
		if _, err := NewSink(t.Context(), l, bad); err == nil {
			t.Errorf("NewSink(%+v) accepted", bad)
		}
	}
}

// TestSinkCursorPerURL: another sink URL starts from the beginning; credentials in the URL
// do not name a different cursor.
func TestSinkCursorPerURL(t *testing.T) {
	t.Parallel()
	l, _ := openTest(t)
	fill(t, l, 3)
	rv := &receiver{t: t}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	s, err := NewSink(t.Context(), l, fastSink(srv.URL+"/a"))
	if err != nil {
		t.Fatal(err)
	}
	stop := runSink(t, s)
	eventually.Within(t, 30*time.Second, cursorAt(s, 3))
	stop()
	withUser := "http://user:pw@" + srv.Listener.Addr().String() + "/a"
	if s2, err := NewSink(t.Context(), l, fastSink(withUser)); err != nil || s2.Cursor() != 3 {
		t.Errorf("same URL with credentials: cursor %v, %v; want 3", s2.Cursor(), err)
	}
	if s3, err := NewSink(t.Context(), l, fastSink(srv.URL+"/b")); err != nil || s3.Cursor() != 0 || s3.Lag() != 3 {
		t.Errorf("another URL: cursor %d lag %d, %v; want 0 and 3", s3.Cursor(), s3.Lag(), err)
	}
}

// TestSinkRefusesToSendWithoutItsChain: a batch whose chain cannot be read is not sent
// unnamed (a receiver would take it for another hub's records): the attempt fails with
// reason "chain" and is retried.
func TestSinkRefusesToSendWithoutItsChain(t *testing.T) {
	t.Parallel()
	l, _ := openTest(t)
	fill(t, l, 2)
	rv := &receiver{t: t, answer: func(int, []sinkRecord) (int, string) { return http.StatusOK, "" }}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	s, err := NewSink(t.Context(), l, fastSink(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.next(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	l.r.Close() // the chain lookup now fails
	a, _, _ := s.deliver(t.Context(), b)
	if a.Err == nil || a.Reason != "chain" {
		t.Errorf("deliver = (err %v, reason %q), want an error with reason chain", a.Err, a.Reason)
	}
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.requests != 0 {
		t.Errorf("%d requests reached the receiver, want none", rv.requests)
	}
	if s.Cursor() != 0 {
		t.Errorf("cursor %d after a failed attempt, want 0", s.Cursor())
	}
}
