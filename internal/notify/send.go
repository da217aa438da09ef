package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/flotilla/flotilla/internal/backoff"
)

// SenderOptions configure a Sender. Zero fields take the defaults documented on each.
type SenderOptions struct {
	// Client sends the requests. Default: a client with a 15s timeout.
	Client *http.Client
	// Attempts bounds the tries of one message. Default 6.
	Attempts int
	// MinBackoff and MaxBackoff bound the jittered exponential backoff. Default 1s and 1m.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps a Retry-After the receiver asks for. Default 5m.
	MaxRetryAfter time.Duration
}

func (o *SenderOptions) setDefaults() {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 15 * time.Second}
	}
	if o.Attempts <= 0 {
		o.Attempts = 6
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(o.MinBackoff, time.Minute)
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 5 * time.Minute
	}
}

// Sender POSTs message bodies.
type Sender struct {
	opts SenderOptions
}

// NewSender returns a sender with opts.
func NewSender(opts SenderOptions) *Sender {
	opts.setDefaults()
	return &Sender{opts: opts}
}

// CheckURL refuses a URL that is neither https:// nor, when insecure, http://: messages carry
// the fleet's state, and a webhook URL is often a secret. name identifies the notification;
// the URL is left out of the error, since it may hold a secret.
func CheckURL(name, raw string, insecure bool) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return &PermanentError{Err: fmt.Errorf("notification %s: the URL is not an http:// or https:// URL", name)}
	case u.Scheme == "http" && !insecure:
		return &PermanentError{Err: fmt.Errorf("notification %s: the URL is plain HTTP: use https://, or set insecure: true on the notification to accept it", name)}
	}
	return nil
}

// PermanentError is a refusal that retrying will not change (a 4xx other than 408 and 429).
type PermanentError struct {
	Status int
	Err    error
}

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Send POSTs body as JSON to url, retrying network errors, 408, 429 and 5xx (waiting at
// least the Retry-After the receiver asks for), up to Attempts times. name identifies the
// notification in errors; the URL is left out of them, since it may hold a secret.
func (s *Sender) Send(ctx context.Context, name, url string, body []byte) error {
	var err error
	for attempt := 1; ; attempt++ {
		var retryAfter time.Duration
		retryAfter, err = s.try(ctx, name, url, body)
		if err == nil {
			return nil
		}
		var perm *PermanentError
		if errors.As(err, &perm) || attempt >= s.opts.Attempts || ctx.Err() != nil {
			return err
		}
		delay := max(backoff.Delay(attempt, s.opts.MinBackoff, s.opts.MaxBackoff, rand.Float64()), min(retryAfter, s.opts.MaxRetryAfter))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-time.After(delay):
		}
	}
}

func (s *Sender) try(ctx context.Context, name, url string, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, &PermanentError{Err: fmt.Errorf("notification %s: bad URL: %w", name, redact(err, url))}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flotilla-hub")
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("notification %s: %w", name, redact(err, url))
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return 0, nil
	}
	err = fmt.Errorf("notification %s: receiver answered %s: %s", name, resp.Status, strings.TrimSpace(string(msg)))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return backoff.RetryAfter(resp.Header.Get("Retry-After"), time.Now()), err
	default:
		return 0, &PermanentError{Status: resp.StatusCode, Err: err}
	}
}

// redact removes the URL, which may be a secret (a Slack webhook URL is one), from err.
func redact(err error, url string) error {
	if url == "" {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), url, "<url>"))
}
