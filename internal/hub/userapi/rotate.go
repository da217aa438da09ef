package userapi

import (
	"net/http"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// rotateCluster revokes every certificate and unused join token of a cluster, keeping the
// cluster, its labels, desired state, statuses and audit trail, and issues a new join token:
// the cluster's agent is locked out until it joins again with that token.
func (api *API) rotateCluster(w http.ResponseWriter, r *http.Request) {
	ctx, name := r.Context(), r.PathValue("name")
	c, err := api.d.Store.GetCluster(ctx, name)
	if err != nil {
		writeStoreError(w, err, name)
		return
	}
	certs, err := api.d.Store.RevokeCertificates(ctx, c.Name, "")
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	// Cached checks of its certificates and its open watch streams end now, on every replica.
	api.d.CertificatesRevoked(c.Name)
	tokens, err := api.d.Store.RevokeJoinTokens(ctx, c.Name, api.d.Clock.Now())
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	api.d.Logger.Info("cluster rotated: its certificates and unused join tokens are revoked", "cluster", c.Name,
		"revokedCertificates", certs, "revokedTokens", tokens)
	api.record(ctx, audit.Event{Action: "cluster.rotated", Cluster: c.Name, Detail: map[string]any{
		"revokedCertificates": certs, "revokedTokens": tokens,
	}})
	j, err := api.joinToken(ctx, c.Name, c.Labels, 0)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, hubclient.RotateView{JoinView: j, RevokedCertificates: certs, RevokedTokens: tokens})
}
