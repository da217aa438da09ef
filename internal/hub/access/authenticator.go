package access

import (
	"context"
	"errors"
	"strings"
)

// Authenticator turns a bearer token into a principal: the bootstrap admin token, a named
// token, or an OIDC ID token.
type Authenticator struct {
	// Bootstrap is the admin token of admin.token, known by its hash; nil: none.
	Bootstrap *Bootstrap
	// Tokens are the named tokens.
	Tokens *Tokens
	// OIDC verifies ID tokens; nil: no OIDC sign-in.
	OIDC *OIDC
}

// Authenticate returns the principal bearer stands for, or an error wrapping
// ErrUnauthenticated (or, for an ID token, saying why it was refused).
func (a *Authenticator) Authenticate(ctx context.Context, bearer string) (Principal, error) {
	switch {
	case bearer == "":
		return Principal{}, ErrUnauthenticated
	case a.Bootstrap.Match(bearer):
		return Principal{Actor: "token:" + BootstrapName, Grants: []Grant{{Role: Admin}}}, nil
	case strings.HasPrefix(bearer, TokenPrefix):
		if a.Tokens == nil {
			return Principal{}, ErrUnauthenticated
		}
		return a.Tokens.Authenticate(ctx, bearer)
	case a.OIDC != nil && strings.Count(bearer, ".") == 2: // a JWT
		p, err := a.OIDC.Verify(ctx, bearer)
		if err != nil {
			return Principal{}, errors.Join(ErrUnauthenticated, err)
		}
		return p, nil
	}
	return Principal{}, ErrUnauthenticated
}
