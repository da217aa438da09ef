package userapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TokenStore keeps the named user tokens (access.Tokens).
type TokenStore interface {
	// Create stores t and returns it with its secret; access.ErrTokenExists if the name is
	// taken.
	Create(ctx context.Context, t access.Token) (access.Token, string, error)
	List(ctx context.Context) ([]access.Token, error)
	// Revoke deletes the named token; access.ErrTokenNotFound if there is none.
	Revoke(ctx context.Context, name string) error
	// Rotate gives the named token a new secret; access.ErrTokenNotFound if there is none.
	Rotate(ctx context.Context, name string) (access.Token, string, error)
}

func (api *API) whoami(w http.ResponseWriter, r *http.Request) {
	p, _ := access.FromContext(r.Context())
	out := hubclient.WhoAmI{Actor: p.Actor, Grants: []hubclient.Grant{}}
	for _, g := range p.Grants {
		out.Grants = append(out.Grants, hubclient.Grant{Role: string(g.Role), Projects: g.Projects})
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// loginInfo tells a client how to sign in; it needs no token.
func (api *API) loginInfo(w http.ResponseWriter, _ *http.Request) {
	out := hubclient.LoginInfo{}
	if api.o.OIDCIssuer != "" {
		out.OIDC = &hubclient.OIDCInfo{Issuer: api.o.OIDCIssuer, ClientID: api.o.OIDCClientID, Scopes: api.o.OIDCScopes}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (api *API) tokenStore(w http.ResponseWriter) bool {
	if api.d.Tokens == nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, errors.New("this hub keeps no named tokens"))
		return false
	}
	return true
}

func tokenView(t access.Token) hubclient.UserToken {
	return hubclient.UserToken{Name: t.Name, Grant: hubclient.Grant{Role: string(t.Grant.Role), Projects: t.Grant.Projects}, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt}
}

func (api *API) listUserTokens(w http.ResponseWriter, r *http.Request) {
	if !api.tokenStore(w) {
		return
	}
	ts, err := api.d.Tokens.List(r.Context())
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	out := make([]hubclient.UserToken, len(ts))
	for i, t := range ts {
		out[i] = tokenView(t)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (api *API) createUserToken(w http.ResponseWriter, r *http.Request) {
	if !api.tokenStore(w) {
		return
	}
	var req hubclient.CreateUserTokenRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("request body: %w", err))
		return
	}
	if err := access.ValidateName(req.Name); err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, err)
		return
	}
	role, err := access.ParseRole(req.Role)
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("token %q: %w", req.Name, err))
		return
	}
	if role == access.Admin && len(req.Projects) > 0 {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("token %q: an admin token covers every project; give no --project", req.Name))
		return
	}
	t := access.Token{Name: req.Name, Grant: access.Grant{Role: role, Projects: req.Projects}}
	if req.Expires != "" {
		d, err := time.ParseDuration(req.Expires)
		if err != nil || d <= 0 {
			httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("token %q: expires %q: want a positive duration such as 720h", req.Name, req.Expires))
			return
		}
		t.ExpiresAt = api.d.Clock.Now().Add(d).UTC()
	}
	t, secret, err := api.d.Tokens.Create(r.Context(), t)
	if errors.Is(err, access.ErrTokenExists) {
		httpapi.WriteError(w, http.StatusConflict, err)
		return
	}
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	detail := map[string]any{"token": t.Name, "grant": t.Grant.String()}
	if !t.ExpiresAt.IsZero() {
		detail["expiresAt"] = t.ExpiresAt
	}
	api.record(r.Context(), audit.Event{Action: "user-token.created", Detail: detail})
	httpapi.WriteJSON(w, http.StatusCreated, hubclient.NewUserToken{Name: t.Name, Token: secret})
}

func (api *API) revokeUserToken(w http.ResponseWriter, r *http.Request) {
	if !api.tokenStore(w) {
		return
	}
	name := r.PathValue("name")
	if err := api.d.Tokens.Revoke(r.Context(), name); err != nil {
		writeTokenError(w, err)
		return
	}
	api.record(r.Context(), audit.Event{Action: "user-token.revoked", Detail: map[string]any{"token": name}})
	w.WriteHeader(http.StatusNoContent)
}

func (api *API) rotateUserToken(w http.ResponseWriter, r *http.Request) {
	if !api.tokenStore(w) {
		return
	}
	name := r.PathValue("name")
	t, secret, err := api.d.Tokens.Rotate(r.Context(), name)
	if err != nil {
		writeTokenError(w, err)
		return
	}
	api.record(r.Context(), audit.Event{Action: "user-token.rotated", Detail: map[string]any{"token": t.Name}})
	httpapi.WriteJSON(w, http.StatusOK, hubclient.NewUserToken{Name: t.Name, Token: secret})
}

func writeTokenError(w http.ResponseWriter, err error) {
	if errors.Is(err, access.ErrTokenNotFound) {
		httpapi.WriteError(w, http.StatusNotFound, err)
		return
	}
	httpapi.WriteError(w, http.StatusInternalServerError, err)
}
