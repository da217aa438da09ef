package hubclient

import (
	"context"
	"net/url"
	"time"
)

// Grant is a role in some projects, or in every project when Projects is empty.
type Grant struct {
	Role     string   `json:"role"`
	Projects []string `json:"projects,omitempty"`
}

// UserToken is a named token of the user API as the hub lists it: never its secret.
type UserToken struct {
	Name      string    `json:"name"`
	Grant     Grant     `json:"grant"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// NewUserToken is a token's name and secret, as `token create` and `token rotate` print
// them: the secret is shown this once.
type NewUserToken struct {
	Name  string `json:"name"`
	Token string `json:"token"`
}

// CreateUserTokenRequest is the body of POST /api/v1/tokens. Expires "" is never; else a
// duration ("720h").
type CreateUserTokenRequest struct {
	Name     string   `json:"name"`
	Role     string   `json:"role"`
	Projects []string `json:"projects,omitempty"`
	Expires  string   `json:"expires,omitempty"`
}

// WhoAmI is the principal a request was authenticated as.
type WhoAmI struct {
	// Actor is the name the audit trail records: token:NAME or oidc:SUBJECT.
	Actor  string  `json:"actor"`
	Grants []Grant `json:"grants"`
}

// LoginInfo is what a client needs to sign in (GET /api/v1/login, no token needed).
type LoginInfo struct {
	// OIDC is set when the hub takes ID tokens of an OpenID Connect issuer.
	OIDC *OIDCInfo `json:"oidc,omitempty"`
}

// OIDCInfo names the issuer and the client ID of the device flow.
type OIDCInfo struct {
	Issuer   string `json:"issuer"`
	ClientID string `json:"clientID"`
	// Scopes to ask for: openid, and what puts the groups claim in the ID token.
	Scopes []string `json:"scopes,omitempty"`
}

// CreateUserToken creates a named token and returns its secret.
func (c *Client) CreateUserToken(ctx context.Context, req CreateUserTokenRequest) (NewUserToken, error) {
	var out NewUserToken
	err := c.do(ctx, "POST", "/api/v1/tokens", req, &out)
	return out, err
}

// UserTokens lists the named tokens.
func (c *Client) UserTokens(ctx context.Context) ([]UserToken, error) {
	var out []UserToken
	err := c.do(ctx, "GET", "/api/v1/tokens", nil, &out)
	return out, err
}

// RevokeUserToken deletes the named token.
func (c *Client) RevokeUserToken(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/api/v1/tokens/"+url.PathEscape(name), nil, nil)
}

// RotateUserToken gives the named token a new secret and returns it.
func (c *Client) RotateUserToken(ctx context.Context, name string) (NewUserToken, error) {
	var out NewUserToken
	err := c.do(ctx, "POST", "/api/v1/tokens/"+url.PathEscape(name)+"/rotate", nil, &out)
	return out, err
}

// WhoAmI returns the principal the client's token stands for.
func (c *Client) WhoAmI(ctx context.Context) (WhoAmI, error) {
	var out WhoAmI
	err := c.do(ctx, "GET", "/api/v1/whoami", nil, &out)
	return out, err
}

// GetLoginInfo asks the hub how to sign in; it needs no token.
func GetLoginInfo(ctx context.Context, cfg Config) (LoginInfo, error) {
	cfg.Token = "none" // the endpoint takes none; NewClient wants one
	c, err := NewClient(cfg)
	if err != nil {
		return LoginInfo{}, err
	}
	var out LoginInfo
	err = c.do(ctx, "GET", "/api/v1/login", nil, &out)
	return out, err
}
