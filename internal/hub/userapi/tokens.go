package userapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pki"
)

// newToken issues a join token for a registered cluster. The cluster's earlier unused tokens
// stop working: only the newest one handed out can join.
func (api *API) newToken(w http.ResponseWriter, r *http.Request) {
	c, err := api.d.Store.GetCluster(r.Context(), r.PathValue("name"))
	if err != nil {
		writeStoreError(w, err, r.PathValue("name"))
		return
	}
	revoked, err := api.d.Store.RevokeJoinTokens(r.Context(), c.Name, api.d.Clock.Now())
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	j, err := api.joinToken(r.Context(), c.Name, c.Labels, revoked)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, j)
}

func (api *API) issueToken(w http.ResponseWriter, r *http.Request, cluster string, labels map[string]string, status int) {
	j, err := api.joinToken(r.Context(), cluster, labels, 0)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	httpapi.WriteJSON(w, status, j)
}

// joinToken creates and records a join token for cluster; revoked is how many unused tokens
// it replaced, for the audit record.
func (api *API) joinToken(ctx context.Context, cluster string, labels map[string]string, revoked int64) (hubclient.JoinView, error) {
	tok, err := pki.NewJoinToken(cluster, api.o.CAFingerprint)
	if err != nil {
		return hubclient.JoinView{}, err
	}
	expires := api.d.Clock.Now().Add(api.o.TokenTTL)
	if err := api.d.Store.CreateJoinToken(ctx, store.JoinToken{ID: tok.ID, SecretHash: pki.SecretHash(tok.Secret), Cluster: cluster, ExpiresAt: expires}); err != nil {
		return hubclient.JoinView{}, err
	}
	api.d.Logger.Info("join token issued", "cluster", cluster, "token", tok.ID, "expires", expires, "revokedTokens", revoked)
	detail := map[string]any{"token": tok.ID, "expiresAt": expires.UTC()}
	if revoked > 0 {
		detail["revokedTokens"] = revoked
	}
	api.record(ctx, audit.Event{Action: "token.issued", Cluster: cluster, Detail: detail})
	enc := tok.Encode()
	return hubclient.JoinView{
		Name: cluster, Labels: labels, JoinToken: enc, ExpiresAt: expires,
		AgentCommand: fmt.Sprintf("flotilla agent --hub %s --join-token %s --kubeconfig KUBECONFIG --state-dir STATE_DIR", api.o.AgentURL, enc),
	}, nil
}
