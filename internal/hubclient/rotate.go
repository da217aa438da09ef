package hubclient

import (
	"context"
	"net/http"
	"net/url"
)

// RotateView is what `cluster rotate` did: the certificates and unused join tokens it
// revoked, and the new join token the cluster's agent re-joins with.
type RotateView struct {
	JoinView
	RevokedCertificates int64 `json:"revokedCertificates"`
	RevokedTokens       int64 `json:"revokedTokens"`
}

// RotateCluster revokes every certificate and unused join token of the cluster, keeping its
// history, and returns a new join token.
func (c *Client) RotateCluster(ctx context.Context, name string) (RotateView, error) {
	var out RotateView
	err := c.do(ctx, http.MethodPost, "/api/v1/clusters/"+url.PathEscape(name)+"/rotate", nil, &out)
	return out, err
}
