package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flotilla/flotilla/internal/backoff"
	"github.com/flotilla/flotilla/internal/clock"
)

// Sink formats: JSON Lines (one record per line) or one JSON array per batch.
const (
	SinkFormatJSONL = "jsonl"
	SinkFormatJSON  = "json"
)

// SinkOptions configure a Sink. Zero fields take the defaults documented on each.
type SinkOptions struct {
	// URL receives every record by HTTP(S) POST. Required.
	URL string
	// Header is added to every request (e.g. Authorization).
	Header http.Header
	// Format of the request body: SinkFormatJSONL (default) or SinkFormatJSON.
	Format string
	// Client sends the requests. Default: a client with a 30s timeout.
	Client *http.Client
	// BatchRecords bounds the records in one request. Default 500.
	BatchRecords int
	// BatchBytes bounds the body of one request (a single larger record still goes alone).
	// Default 1 MiB.
	BatchBytes int
	// PollInterval is how often the log is checked for new records when the sink is caught
	// up. Default 1s.
	PollInterval time.Duration
	// MinBackoff and MaxBackoff bound the jittered exponential backoff between failed
	// deliveries. Default 1s and 2m.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps a Retry-After the receiver asks for. Default 10m.
	MaxRetryAfter time.Duration
	// Observe, if set, is told of every delivery attempt (the hub turns it into metrics).
	Observe func(SinkAttempt)
	// Clock times the waits between attempts and reads Retry-After dates. Default the real
	// clock.
	Clock  clock.Clock
	Logger *slog.Logger
}

// SinkAttempt is the outcome of one POST.
type SinkAttempt struct {
	// Records in the batch, and the first and last seq.
	Records           int
	FirstSeq, LastSeq int64
	Err               error
	// Reason classifies a failure with a bounded set of values: "network", "429", "5xx",
	// "4xx" (refused: retried all the same, since dropping it would lose records), "cursor"
	// (delivered, but the cursor could not be saved), "chain" (the chain's first record could
	// not be read: not sent). Empty on success.
	Reason string
}

func (o *SinkOptions) setDefaults() {
	if o.Format == "" {
		o.Format = SinkFormatJSONL
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if o.BatchRecords <= 0 {
		o.BatchRecords = 500
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 1 << 20
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 2 * time.Minute
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Clock = clock.Or(o.Clock)
}

// Sink streams the log, in sequence order, to an HTTP receiver, at least once: a record
// leaves the sink's backlog only when the receiver answered 2xx for the batch holding it, and
// the last seq so acknowledged (the cursor) is kept in the log's own file, so a restarted hub
// resumes after it. A crash between the receiver's 2xx and the cursor's commit sends that batch
// again: receivers de-duplicate by seq.
type Sink struct {
	log  *Log
	opts SinkOptions
	key  string // the cursor's row: the URL without credentials

	cursor, head atomic.Int64
	failures     atomic.Int64
	chain        string // hash of record 1, once read; only Run's goroutine
}

const sinkSchema = `
CREATE TABLE IF NOT EXISTS sink_cursor (
	sink    TEXT PRIMARY KEY,
	seq     INTEGER NOT NULL,
	updated INTEGER NOT NULL
) STRICT;
`

// NewSink prepares a sink of l: it checks the options and reads the cursor. Run delivers.
func NewSink(ctx context.Context, l *Log, opts SinkOptions) (*Sink, error) {
	opts.setDefaults()
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("audit sink %q: want an http:// or https:// URL", opts.URL)
	}
	if opts.Format != SinkFormatJSONL && opts.Format != SinkFormatJSON {
		return nil, fmt.Errorf("audit sink format %q: want %s or %s", opts.Format, SinkFormatJSONL, SinkFormatJSON)
	}
	u.User = nil
	s := &Sink{log: l, opts: opts, key: u.String()}
	if _, err := l.w.ExecContext(ctx, sinkSchema); err != nil {
		return nil, fmt.Errorf("audit sink %s: cursor table: %w", s.key, err)
	}
	var seq int64
	switch err := l.w.QueryRowContext(ctx, `SELECT seq FROM sink_cursor WHERE sink = ?`, s.key).Scan(&seq); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("audit sink %s: read cursor: %w", s.key, err)
	}
	s.cursor.Store(seq)
	head, _, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	s.head.Store(head)
	return s, nil
}

// String names the sink: its URL without credentials.
func (s *Sink) String() string { return s.key }

// Cursor is the last seq the receiver acknowledged.
func (s *Sink) Cursor() int64 { return s.cursor.Load() }

// Lag is how many records the receiver has not acknowledged yet, as of the sink's last look
// at the log (at most PollInterval ago while it is caught up).
func (s *Sink) Lag() int64 { return max(0, s.head.Load()-s.cursor.Load()) }

// Failures counts failed delivery attempts since the sink started.
func (s *Sink) Failures() int64 { return s.failures.Load() }

// Run delivers until ctx ends. It only returns ctx's error: every failure is retried.
func (s *Sink) Run(ctx context.Context) error {
	batchLimit := s.opts.BatchRecords
	attempt := 0
	for {
		if head, _, err := s.log.Head(ctx); err == nil {
			s.head.Store(head)
		}
		var delay time.Duration
		b, err := s.next(ctx, batchLimit)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			s.opts.Logger.Error("audit sink: read the log", "sink", s.key, "error", err)
			delay = s.opts.MaxBackoff
		case len(b.lines) == 0:
			delay = s.opts.PollInterval
		default:
			a, retryAfter, tooLarge := s.deliver(ctx, b)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if s.opts.Observe != nil {
				s.opts.Observe(a)
			}
			if a.Err == nil {
				attempt = 0
				batchLimit = min(s.opts.BatchRecords, batchLimit*2)
				continue // more may be waiting
			}
			s.failures.Add(1)
			if tooLarge && a.Records > 1 {
				// The receiver refuses bodies this large: halve the batch and try at once.
				batchLimit = max(1, a.Records/2)
				continue
			}
			attempt++
			delay = max(backoff.Delay(attempt, s.opts.MinBackoff, s.opts.MaxBackoff, rand.Float64()), min(retryAfter, s.opts.MaxRetryAfter))
			s.opts.Logger.Warn("audit sink: delivery failed; retrying", "sink", s.key, "records", a.Records,
				"firstSeq", a.FirstSeq, "lastSeq", a.LastSeq, "attempt", attempt, "retryIn", delay, "error", a.Err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.opts.Clock.After(delay):
		}
	}
}

// sinkRecord is a record as the sink sends it: the fields of `flotilla audit -o jsonl`, with
// detail as the exact canonical JSON that was hashed, so a receiver can check each hash.
type sinkRecord struct {
	Seq      int64           `json:"seq"`
	Time     time.Time       `json:"time"`
	Actor    string          `json:"actor"`
	Action   string          `json:"action"`
	Cluster  string          `json:"cluster,omitempty"`
	Release  string          `json:"release,omitempty"`
	Detail   json.RawMessage `json:"detail,omitempty"`
	PrevHash string          `json:"prevHash"`
	Hash     string          `json:"hash"`
}

// batch is records encoded one per line, and the first and last seq.
type batch struct {
	lines       [][]byte
	first, last int64
}

// next reads up to limit records after the cursor, within BatchBytes once encoded.
func (s *Sink) next(ctx context.Context, limit int) (batch, error) {
	rows, err := s.log.r.QueryContext(ctx, `SELECT `+columns+` FROM records WHERE seq > ? ORDER BY seq LIMIT ?`, s.cursor.Load(), limit)
	if err != nil {
		return batch{}, err
	}
	defer rows.Close()
	var b batch
	size := 0
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return batch{}, err
		}
		sr := sinkRecord{Seq: r.Seq, Time: r.Time, Actor: r.Actor, Action: r.Action, Cluster: r.Cluster, Release: r.Release, PrevHash: r.PrevHash, Hash: r.Hash}
		if r.detail != "{}" && r.detail != "" {
			sr.Detail = json.RawMessage(r.detail)
		}
		line, err := json.Marshal(sr)
		if err != nil {
			return batch{}, fmt.Errorf("audit record %d: %w", r.Seq, err)
		}
		if len(b.lines) > 0 && size+len(line)+1 > s.opts.BatchBytes {
			break
		}
		if len(b.lines) == 0 {
			b.first = r.Seq
		}
		b.lines, b.last = append(b.lines, line), r.Seq
		size += len(line) + 1
	}
	return b, rows.Err()
}

// deliver POSTs one batch and, on a 2xx, advances the cursor. It reports the attempt, the
// Retry-After the receiver asked for, and whether the receiver found the body too large.
func (s *Sink) deliver(ctx context.Context, b batch) (a SinkAttempt, retryAfter time.Duration, tooLarge bool) {
	recs := b.lines
	a = SinkAttempt{Records: len(recs), FirstSeq: b.first, LastSeq: b.last}
	var body []byte
	contentType := "application/x-ndjson"
	if s.opts.Format == SinkFormatJSON {
		contentType = "application/json"
		body = append(append([]byte{'['}, bytes.Join(recs, []byte{','})...), ']')
	} else {
		body = append(bytes.Join(recs, []byte{'\n'}), '\n')
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.URL, bytes.NewReader(body))
	if err != nil {
		a.Err, a.Reason = fmt.Errorf("audit sink %s: %w", s.key, err), "network"
		return a, 0, false
	}
	for k, vs := range s.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Flotilla-Audit-First-Seq", strconv.FormatInt(a.FirstSeq, 10))
	req.Header.Set("X-Flotilla-Audit-Last-Seq", strconv.FormatInt(a.LastSeq, 10))
	if s.chain == "" {
		// Without the chain a receiver cannot tell this hub's records from another's with the
		// same seq, so a failed lookup fails the attempt (retried) rather than sending them
		// unnamed. No record 1 (nothing to name the chain by) sends them without the header.
		err := s.log.r.QueryRowContext(ctx, `SELECT hash FROM records WHERE seq = 1`).Scan(&s.chain)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			a.Err, a.Reason = fmt.Errorf("audit sink %s: records %d-%d: read the chain's first record: %w", s.key, a.FirstSeq, a.LastSeq, err), "chain"
			return a, 0, false
		}
	}
	if s.chain != "" {
		// Names the chain: several hubs (replicas, or a hub whose data dir was replaced)
		// each have their own, numbered from 1; receivers de-duplicate by chain and seq.
		req.Header.Set("X-Flotilla-Audit-Chain", s.chain)
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		a.Err, a.Reason = fmt.Errorf("audit sink %s: records %d-%d: %w", s.key, a.FirstSeq, a.LastSeq, err), "network"
		return a, 0, false
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // reuse the connection
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		a.Err = fmt.Errorf("audit sink %s: records %d-%d: %s: %s", s.key, a.FirstSeq, a.LastSeq, resp.Status, strings.TrimSpace(string(msg)))
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			a.Reason = "429"
		case resp.StatusCode >= 500:
			a.Reason = "5xx"
		default:
			a.Reason = "4xx"
		}
		return a, backoff.RetryAfter(resp.Header.Get("Retry-After"), s.opts.Clock.Now()), resp.StatusCode == http.StatusRequestEntityTooLarge
	}
	// The receiver has the batch: a failure from here on resends it (at least once).
	if _, err := s.log.w.ExecContext(context.WithoutCancel(ctx), `INSERT INTO sink_cursor (sink, seq, updated) VALUES (?, ?, ?)
		ON CONFLICT (sink) DO UPDATE SET seq = excluded.seq, updated = excluded.updated`, s.key, a.LastSeq, s.opts.Clock.Now().UnixNano()); err != nil {
		a.Err, a.Reason = fmt.Errorf("audit sink %s: save cursor %d: %w", s.key, a.LastSeq, err), "cursor"
		return a, 0, false
	}
	s.cursor.Store(a.LastSeq)
	return a, 0, false
}
