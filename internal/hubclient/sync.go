package hubclient

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// SyncRequest is the body of POST /api/v1/releases/{release}/sync and POST /api/v1/sync
// (`flotilla sync`): make the affected agents reconcile now.
type SyncRequest struct {
	// Cluster is the one cluster to sync; "": every cluster the release is assigned to.
	Cluster string `json:"cluster,omitempty"`
	// Override lets this one sync pass the windows and freezes that hold the release back;
	// it needs a Reason, and is audited as sync.override.
	Override bool   `json:"override,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// SyncView is a sync request as the hub stored it. Its JSON field names are a documented
// contract for scripts.
type SyncView struct {
	ID string `json:"id"`
	// Release is "" for every release.
	Release string `json:"release,omitempty"`
	// Cluster is "" for every cluster.
	Cluster  string    `json:"cluster,omitempty"`
	Override bool      `json:"override"`
	Reason   string    `json:"reason,omitempty"`
	Actor    string    `json:"actor"`
	Created  time.Time `json:"created"`
	// Expires is when the request leaves the documents of the agents that have not acted on
	// it yet.
	Expires time.Time `json:"expires"`
}

// Sync asks the agents of release (or, with release "", of every release) to reconcile now.
func (c *Client) Sync(ctx context.Context, release string, req SyncRequest) (SyncView, error) {
	path := "/api/v1/sync"
	if release != "" {
		path = "/api/v1/releases/" + url.PathEscape(release) + "/sync"
	}
	var out SyncView
	err := c.do(ctx, http.MethodPost, path, req, &out)
	return out, err
}
