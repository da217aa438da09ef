package userapi

import (
	"net/http"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
)

// serve serves api as the hub does: its routes under /api/ behind an httpapi.Server that
// authenticates with auth, and its public routes beside them.
func serve(api *API, auth httpapi.Authenticator) http.Handler {
	front := httpapi.New(httpapi.Deps{
		Auth: auth, Fleet: func() *v1alpha1.Fleet { return api.d.View().Fleet },
		Record: api.d.Record, Clock: api.d.Clock, Logger: api.d.Logger,
	}, httpapi.Options{})
	return front.Handler(api.Routes(), api.Public())
}

// adminToken accepts token alone, as the bootstrap admin token.
func adminToken(t *testing.T, token string) httpapi.Authenticator {
	t.Helper()
	b, err := access.NewBootstrap(token)
	if err != nil {
		t.Fatal(err)
	}
	return &access.Authenticator{Bootstrap: b}
}
