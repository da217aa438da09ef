package dashboard

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxAge bounds how stale the dashboard's fleet document can be when nothing
// announced a change (Snapshots.Changed): a cluster that turns unreachable with time, or a
// report ingested by another hub replica, shows within it.
const DefaultMaxAge = 15 * time.Second

// SnapshotOptions configure a Snapshots cache.
type SnapshotOptions struct {
	// MinInterval is the least time between two computations, however often the fleet
	// changes: with a thousand agents reporting, something changes all the time. Default 1s.
	MinInterval time.Duration
	// MaxBusy is the largest share of one CPU the computations may take while the fleet keeps
	// changing: after a computation that took d, the next waits at least d/MaxBusy. At 1,000
	// clusters x 20 releases, where one computation takes about as long as GET /api/v1/status,
	// this, not MinInterval, sets the pace. Default 0.2.
	MaxBusy float64
	// MaxAge is how long a document is served when no change was announced. Default
	// DefaultMaxAge.
	MaxAge time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (o *SnapshotOptions) setDefaults() {
	if o.MinInterval <= 0 {
		o.MinInterval = time.Second
	}
	if o.MaxBusy <= 0 || o.MaxBusy > 1 {
		o.MaxBusy = 0.2
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxAge < o.MinInterval {
		o.MaxAge = o.MinInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Snapshots serves a JSON document computed on demand, again only when a change was announced
// (Changed) or MaxAge passed, and never more often than MinInterval and MaxBusy allow, however
// many dashboards poll it. It is gzipped once and carries a strong ETag over its content, so a
// poller whose copy is current gets 304 Not Modified and no body. Requests that arrive while
// the document is being computed wait for that computation instead of starting their own.
type Snapshots struct {
	opts    SnapshotOptions
	compute func(context.Context) (any, error)
	changed atomic.Bool

	mu   sync.Mutex
	at   time.Time
	cost time.Duration // of the last computation
	snap *snapshot
}

type snapshot struct {
	raw, gz []byte
	etag    string
}

// NewSnapshots returns a cache over compute, whose result is encoded as JSON.
func NewSnapshots(compute func(context.Context) (any, error), opts SnapshotOptions) *Snapshots {
	opts.setDefaults()
	return &Snapshots{opts: opts, compute: compute}
}

// Changed announces that the document may have changed. It costs an atomic store, so it can
// be called on every report an agent sends.
func (s *Snapshots) Changed() { s.changed.Store(true) }

func (s *Snapshots) get(ctx context.Context) (*snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if s.snap != nil {
		age := now.Sub(s.at)
		gap := max(s.opts.MinInterval, time.Duration(float64(s.cost)/s.opts.MaxBusy))
		if age < gap || (age < s.opts.MaxAge && !s.changed.Load()) {
			return s.snap, nil
		}
	}
	// Cleared before computing: a change announced during the computation is seen next time.
	s.changed.Store(false)
	v, err := s.compute(ctx)
	if err != nil {
		s.changed.Store(true)
		return nil, err
	}
	s.cost = s.opts.Now().Sub(now)
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("dashboard document: %w", err)
	}
	sum := sha256.Sum256(raw)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
	if s.snap != nil && s.snap.etag == etag {
		// Unchanged: keep the compressed copy we have.
		s.at = now
		return s.snap, nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("dashboard document: gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("dashboard document: gzip: %w", err)
	}
	s.snap, s.at = &snapshot{raw: raw, gz: buf.Bytes(), etag: etag}, now
	return s.snap, nil
}

// ServeHTTP answers GET with the current document, 304 when If-None-Match names it.
func (s *Snapshots) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	snap, err := s.get(r.Context())
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	h := w.Header()
	h.Set("ETag", snap.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("Vary", "Accept-Encoding")
	if etagMatches(r.Header.Get("If-None-Match"), snap.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	body := snap.raw
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = snap.gz
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == etag || t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// acceptsGzip: Accept-Encoding lists gzip (or *) with a q-value above zero.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.TrimSpace(name)
		if !strings.EqualFold(name, "gzip") && name != "*" {
			continue
		}
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				q = f
			}
		}
		return q > 0
	}
	return false
}
