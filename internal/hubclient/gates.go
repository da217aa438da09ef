package hubclient

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// FreezeRequest is the body of POST /api/v1/freezes (every release) and POST
// /api/v1/releases/{release}/freeze (`flotilla freeze`).
type FreezeRequest struct {
	// Selector are the labels of the clusters to freeze; empty: every cluster.
	Selector map[string]string `json:"selector,omitempty"`
	// Reason is required: agents show it in the status of every release it holds back.
	Reason string `json:"reason"`
}

// FreezeView is a freeze in force. Its JSON field names are a documented contract for
// scripts.
type FreezeView struct {
	ID string `json:"id"`
	// Release is "" when every release is frozen.
	Release string `json:"release,omitempty"`
	// Selector is empty when every cluster is frozen.
	Selector map[string]string `json:"selector,omitempty"`
	Reason   string            `json:"reason"`
	Actor    string            `json:"actor"`
	Created  time.Time         `json:"created"`
	// Clusters is how many registered clusters the selector matches now.
	Clusters int `json:"clusters"`
}

// SuspendRequest is the body of POST /api/v1/clusters/{name}/suspend.
type SuspendRequest struct {
	Reason string `json:"reason,omitempty"`
}

// SuspensionView says whether a cluster is suspended, since when, by whom and why.
type SuspensionView struct {
	Cluster   string     `json:"cluster"`
	Suspended bool       `json:"suspended"`
	Reason    string     `json:"reason,omitempty"`
	Actor     string     `json:"actor,omitempty"`
	Since     *time.Time `json:"since,omitempty"`
	// Changed is false when the call found the cluster as it asked (already suspended,
	// or not suspended): nothing was done or audited.
	Changed bool `json:"changed"`
}

// Freeze freezes release (every release when "") on the clusters req selects.
func (c *Client) Freeze(ctx context.Context, release string, req FreezeRequest) (FreezeView, error) {
	path := "/api/v1/freezes"
	if release != "" {
		path = "/api/v1/releases/" + url.PathEscape(release) + "/freeze"
	}
	var out FreezeView
	err := c.do(ctx, http.MethodPost, path, req, &out)
	return out, err
}

// Freezes lists the freezes in force, oldest first.
func (c *Client) Freezes(ctx context.Context) ([]FreezeView, error) {
	var out []FreezeView
	err := c.do(ctx, http.MethodGet, "/api/v1/freezes", nil, &out)
	return out, err
}

// Unfreeze lifts a freeze. A freeze of one release is lifted through that release's path,
// which a deployer of its project may use; release "" uses the fleet-wide path.
func (c *Client) Unfreeze(ctx context.Context, release, id string) (FreezeView, error) {
	path := "/api/v1/freezes/" + url.PathEscape(id)
	if release != "" {
		path = "/api/v1/releases/" + url.PathEscape(release) + "/freezes/" + url.PathEscape(id)
	}
	var out FreezeView
	err := c.do(ctx, http.MethodDelete, path, nil, &out)
	return out, err
}

// SuspendCluster stops new revisions on a cluster until ResumeCluster.
func (c *Client) SuspendCluster(ctx context.Context, name, reason string) (SuspensionView, error) {
	var out SuspensionView
	err := c.do(ctx, http.MethodPost, "/api/v1/clusters/"+url.PathEscape(name)+"/suspend", SuspendRequest{Reason: reason}, &out)
	return out, err
}

// ResumeCluster lifts a cluster's suspension.
func (c *Client) ResumeCluster(ctx context.Context, name string) (SuspensionView, error) {
	var out SuspensionView
	err := c.do(ctx, http.MethodPost, "/api/v1/clusters/"+url.PathEscape(name)+"/resume", nil, &out)
	return out, err
}
