package hubclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"
)

// Client talks to a hub's user API.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// Config says where the hub is and how to authenticate.
type Config struct {
	// Hub is the API's URL, https://HOST:PORT.
	Hub string
	// Token is the admin bearer token.
	Token string
	// CAFile is the hub's CA certificate (ca.crt in its data dir).
	CAFile string
}

// Errors of NewClient for what a Config lacks.
var (
	ErrNoHub   = errors.New("no hub address: give --hub or set FLOTILLA_HUB")
	ErrNoToken = errors.New("no API token: give --token or set FLOTILLA_TOKEN (the hub writes it to admin.token in its data dir)")
)

// NewClient checks cfg and returns a client; errors name what is missing and where it can
// come from (ErrNoHub, ErrNoToken).
func NewClient(cfg Config) (*Client, error) {
	if cfg.Hub == "" {
		return nil, ErrNoHub
	}
	if _, err := url.Parse(cfg.Hub); err != nil {
		return nil, fmt.Errorf("hub address %q: %w", cfg.Hub, err)
	}
	if cfg.Token == "" {
		return nil, ErrNoToken
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("hub CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("hub CA %s: no PEM certificate in it", cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	return &Client{base: cfg.Hub, token: cfg.Token, http: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true},
	}}, nil
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if out != nil && len(data) > 0 {
		return json.Unmarshal(data, out)
	}
	return nil
}

// send makes a request and returns the response of a successful one, body unread; an error
// answer is returned as a *StatusError.
func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	return c.request(ctx, c.http, method, path, rd, contentType)
}

// request makes a request with hc and returns the response of a successful one, body unread; an
// error answer is returned as a *StatusError.
func (c *Client) request(ctx context.Context, hc *http.Client, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hub %s: %w", c.base, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var apiErr APIError
		if json.Unmarshal(data, &apiErr) == nil && apiErr.Error != "" {
			return nil, &StatusError{Code: resp.StatusCode, Message: apiErr.Error}
		}
		return nil, &StatusError{Code: resp.StatusCode, Message: resp.Status}
	}
	return resp, nil
}

// StatusError is an error answer from the hub.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string { return e.Message }

// AddCluster registers a cluster and returns its first join token.
func (c *Client) AddCluster(ctx context.Context, name string, labels map[string]string) (JoinView, error) {
	var out JoinView
	err := c.do(ctx, http.MethodPost, "/api/v1/clusters", map[string]any{"name": name, "labels": labels}, &out)
	return out, err
}

// NewJoinToken issues another join token for a cluster (to re-join after losing the state dir).
func (c *Client) NewJoinToken(ctx context.Context, name string) (JoinView, error) {
	var out JoinView
	err := c.do(ctx, http.MethodPost, "/api/v1/clusters/"+url.PathEscape(name)+"/token", nil, &out)
	return out, err
}

// Clusters lists the clusters.
func (c *Client) Clusters(ctx context.Context) ([]ClusterView, error) {
	var out []ClusterView
	err := c.do(ctx, http.MethodGet, "/api/v1/clusters", nil, &out)
	return out, err
}

// Cluster returns one cluster.
func (c *Client) Cluster(ctx context.Context, name string) (ClusterView, error) {
	var out ClusterView
	err := c.do(ctx, http.MethodGet, "/api/v1/clusters/"+url.PathEscape(name), nil, &out)
	return out, err
}

// LabelCluster sets labels; a nil value removes that label.
func (c *Client) LabelCluster(ctx context.Context, name string, labels map[string]*string) (ClusterView, error) {
	var out ClusterView
	err := c.do(ctx, http.MethodPatch, "/api/v1/clusters/"+url.PathEscape(name)+"/labels", map[string]any{"labels": labels}, &out)
	return out, err
}

// RemoveCluster removes a cluster and revokes its certificates.
func (c *Client) RemoveCluster(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/clusters/"+url.PathEscape(name), nil, nil)
}

// Releases lists the releases of the fleet configuration in force.
func (c *Client) Releases(ctx context.Context) ([]ReleaseView, error) {
	var out []ReleaseView
	err := c.do(ctx, http.MethodGet, "/api/v1/releases", nil, &out)
	return out, err
}

// Sources lists the sources' last polls.
func (c *Client) Sources(ctx context.Context) ([]SourceView, error) {
	var out []SourceView
	err := c.do(ctx, http.MethodGet, "/api/v1/sources", nil, &out)
	return out, err
}

// Status returns the whole fleet's status.
func (c *Client) Status(ctx context.Context) (StatusView, error) {
	return c.FilteredStatus(ctx, StatusFilter{})
}

// FilteredStatus returns the status of the assignments f selects, filtered by the hub. An
// unknown release or cluster is a *StatusError with Code 404.
func (c *Client) FilteredStatus(ctx context.Context, f StatusFilter) (StatusView, error) {
	var out StatusView
	q := map[string]string{"release": f.Release, "cluster": f.Cluster}
	if f.SummaryOnly {
		q["summary"] = "true"
	}
	err := c.do(ctx, http.MethodGet, "/api/v1/status"+query(q), nil, &out)
	return out, err
}

// Skew returns, per release, the revisions its clusters run; release "" is every release.
func (c *Client) Skew(ctx context.Context, release string) (SkewView, error) {
	var out SkewView
	err := c.do(ctx, http.MethodGet, "/api/v1/skew"+query(map[string]string{"release": release}), nil, &out)
	return out, err
}

// Drift returns the drifted objects the agents last reported.
func (c *Client) Drift(ctx context.Context, f DriftFilter) (DriftView, error) {
	var out DriftView
	err := c.do(ctx, http.MethodGet, "/api/v1/drift"+query(map[string]string{"release": f.Release, "cluster": f.Cluster}), nil, &out)
	return out, err
}

// query encodes the non-empty values as "?k=v&...", or "" when there are none.
func query(kv map[string]string) string {
	q := url.Values{}
	for k, v := range kv {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

func (f AuditFilter) query() url.Values {
	q := url.Values{}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	for k, v := range map[string]string{"cluster": f.Cluster, "release": f.Release, "action": f.Action} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}

// Audit returns the newest audit records f selects, in sequence order.
func (c *Client) Audit(ctx context.Context, f AuditFilter) ([]AuditRecord, error) {
	var out []AuditRecord
	err := c.do(ctx, http.MethodGet, "/api/v1/audit?"+f.query().Encode(), nil, &out)
	return out, err
}

// ExportAudit streams the audit records f selects to w as JSON Lines (all of them unless
// f.Limit is set).
func (c *Client) ExportAudit(ctx context.Context, f AuditFilter, w io.Writer) error {
	q := f.query()
	q.Set("format", "jsonl")
	resp, err := c.send(ctx, http.MethodGet, "/api/v1/audit?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("audit export from hub %s: %w", c.base, err)
	}
	return nil
}

// VerifyAudit has the hub walk its whole audit chain. A broken chain is a *StatusError with
// Code 409 whose message names the first broken record.
func (c *Client) VerifyAudit(ctx context.Context) (AuditVerification, error) {
	var out AuditVerification
	err := c.do(ctx, http.MethodGet, "/api/v1/audit/verify", nil, &out)
	return out, err
}
