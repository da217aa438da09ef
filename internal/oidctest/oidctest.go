// Package oidctest starts a real OpenID provider for tests, the way net/http/httptest starts a
// server: zitadel's op package with its example in-memory storage, serving discovery, keys,
// tokens and the device authorization grant over TLS on a loopback address (its certificate
// signed by a CA of its own, as a company's issuer often is), stopped by t.Cleanup.
package oidctest

import (
	"context"
	"crypto/sha256"
	"encoding/pem"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Issuer is a running provider. Its users are the example storage's, "id1" and "id2".
type Issuer struct {
	// URL is the issuer URL (https://127.0.0.1:PORT).
	URL string
	// CAFile holds the PEM certificate that clients must trust for URL.
	CAFile  string
	storage *storage.Storage
}

// Start starts a provider with one public client, clientID, allowed the device flow. groups
// lists, per user, the groups its ID tokens' "groups" claim holds.
func Start(t testing.TB, clientID string, groups map[string][]string) *Issuer {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "https://" + ln.Addr().String()
	st := storage.NewStorageWithClients(storage.NewUserStore(issuer), map[string]*storage.Client{clientID: storage.DeviceClient(clientID, "")})
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:                sha256.Sum256([]byte("flotilla test issuer")),
		DefaultLogoutRedirectURI: "/",
		DeviceAuthorization: op.DeviceAuthorizationConfig{
			Lifetime: 5 * time.Minute, PollInterval: time.Second, UserFormPath: "/device", UserCode: op.UserCodeBase20,
		},
	}, issuerStorage{Storage: st, groups: groups}, op.StaticIssuer(issuer))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(provider)
	srv.Listener.Close()
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile := filepath.Join(t.TempDir(), "issuer-ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Issuer{URL: issuer, CAFile: caFile, storage: st}
}

// Approve signs user in for the device code userCode, as the user would in a browser.
func (i *Issuer) Approve(ctx context.Context, userCode, user string) error {
	return i.storage.CompleteDeviceAuthorization(ctx, userCode, user)
}

// issuerStorage puts the groups claim in ID tokens and makes the device client public (no
// secret), as a CLI's is.
type issuerStorage struct {
	*storage.Storage
	groups map[string][]string
}

func (s issuerStorage) SetUserinfoFromScopes(_ context.Context, ui *oidc.UserInfo, userID, _ string, _ []string) error {
	ui.AppendClaims("groups", s.groups[userID])
	return nil
}

func (s issuerStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return publicClient{c}, nil
}

type publicClient struct{ op.Client }

func (publicClient) AuthMethod() oidc.AuthMethod { return oidc.AuthMethodNone }

// ApplicationType native: what makes the device flow take the client without a secret.
func (publicClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
