package hubclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Headers of a bundle export: its generation and the bytes of its contents (a little less
// than the file: tar headers), for progress.
const (
	HeaderBundleGeneration = "X-Flotilla-Bundle-Generation"
	HeaderBundleBytes      = "X-Flotilla-Bundle-Bytes"
)

// BundleInfo is what the hub says of a bundle it streams.
type BundleInfo struct {
	Generation int64
	// Bytes is the size of its contents, -1 when the hub did not say.
	Bytes int64
}

// ExportBundle streams the signed offline bundle of cluster to w (docs/airgap.md). info is
// called once the hub has answered, before the first byte is written. Bundles can be large:
// no overall timeout applies, ctx bounds the transfer.
func (c *Client) ExportBundle(ctx context.Context, cluster string, w io.Writer, info func(BundleInfo)) error {
	resp, err := c.sendLong(ctx, http.MethodGet, "/api/v1/bundles/"+url.PathEscape(cluster), nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	bi := BundleInfo{Bytes: -1}
	bi.Generation, _ = strconv.ParseInt(resp.Header.Get(HeaderBundleGeneration), 10, 64)
	if n, err := strconv.ParseInt(resp.Header.Get(HeaderBundleBytes), 10, 64); err == nil {
		bi.Bytes = n
	}
	if info != nil {
		info(bi)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("bundle of cluster %q from hub %s: %w (the file is incomplete)", cluster, c.base, err)
	}
	return nil
}

// ReportsImport is the hub's answer to an imported reports file.
type ReportsImport struct {
	Cluster string `json:"cluster"`
	// Reports is the number in the file; Ingested those ingested now; Duplicates those the hub
	// had already (online or from an earlier import).
	Reports    int `json:"reports"`
	Ingested   int `json:"ingested"`
	Duplicates int `json:"duplicates"`
	// Refused are reports the hub will never take (a release its desired state does not
	// hold), as online: dropped, with why.
	Refused  []RefusedReport `json:"refused,omitempty"`
	FirstSeq uint64          `json:"firstSeq"`
	LastSeq  uint64          `json:"lastSeq"`
	// IngestedThrough is the highest seq the hub has of the cluster now: the next bundle
	// carries it, and the agent then drops those reports from its outbox.
	IngestedThrough uint64 `json:"ingestedThrough"`
}

// RefusedReport is one report an import refused.
type RefusedReport struct {
	Seq   uint64 `json:"seq"`
	Error string `json:"error"`
}

// ImportReports sends a reports file written by `flotilla agent export-reports`.
func (c *Client) ImportReports(ctx context.Context, file io.Reader) (ReportsImport, error) {
	var out ReportsImport
	resp, err := c.sendLong(ctx, http.MethodPost, "/api/v1/reports/import", file, "application/x-tar")
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return out, fmt.Errorf("hub %s: answer to the reports import: %w", c.base, err)
	}
	return out, nil
}

// sendLong is send for transfers that may outlast the client's timeout: a raw body, and the
// context as the only bound.
func (c *Client) sendLong(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	hc := *c.http
	hc.Timeout = 0
	return c.request(ctx, &hc, method, path, body, contentType)
}
