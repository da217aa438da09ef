package userapi

import (
	"fmt"
	"net/http"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubapi"
	"github.com/flotilla/flotilla/internal/pki"
)

func (api *API) newToken(w http.ResponseWriter, r *http.Request) {
	c, err := api.d.Store.GetCluster(r.Context(), r.PathValue("name"))
	if err != nil {
		writeStoreError(w, err, r.PathValue("name"))
		return
	}
	api.issueToken(w, r, c.Name, c.Labels, http.StatusOK)
}

func (api *API) issueToken(w http.ResponseWriter, r *http.Request, cluster string, labels map[string]string, status int) {
	tok, err := pki.NewJoinToken(cluster, api.o.CAFingerprint)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	expires := api.d.Clock.Now().Add(api.o.TokenTTL)
	if err := api.d.Store.CreateJoinToken(r.Context(), store.JoinToken{ID: tok.ID, SecretHash: pki.SecretHash(tok.Secret), Cluster: cluster, ExpiresAt: expires}); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	api.d.Logger.Info("join token issued", "cluster", cluster, "token", tok.ID, "expires", expires)
	api.record(r.Context(), audit.Event{Action: "token.issued", Cluster: cluster, Detail: map[string]any{"token": tok.ID, "expiresAt": expires.UTC()}})
	enc := tok.Encode()
	writeJSON(w, status, hubapi.JoinView{
		Name: cluster, Labels: labels, JoinToken: enc, ExpiresAt: expires,
		AgentCommand: fmt.Sprintf("flotilla agent --hub %s --join-token %s --kubeconfig KUBECONFIG --state-dir STATE_DIR", api.o.AgentURL, enc),
	})
}
