package access

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// OIDCOptions configure sign-in with ID tokens of an OpenID Connect issuer. Issuer empty:
// no OIDC sign-in.
type OIDCOptions struct {
	// Issuer is the issuer URL; its discovery document is read at the first sign-in. It must
	// be https, except on a loopback address.
	Issuer string
	// ClientID is the audience ID tokens must be issued for; `flotilla login` uses it for the
	// device flow too.
	ClientID string
	// GroupsClaim is the claim that lists the subject's groups. Default "groups".
	GroupsClaim string
	// CAFile, if set, holds PEM certificates trusted for the issuer besides the system's
	// (an issuer whose certificate a private CA signed).
	CAFile string
	// GroupRoles map groups to grants: "GROUP=ROLE" (every project) or
	// "GROUP=ROLE:PROJECT[,PROJECT...]". A subject gets the grants of each of its groups, and
	// is refused when it is in none.
	GroupRoles []string
	// KeyRefreshInterval is how often, at most, a token signed with a key the hub does not
	// hold makes it read the issuer's keys again. Default DefaultKeyRefreshInterval.
	KeyRefreshInterval time.Duration
	// Clock is for token expiry and the key refresh bound; nil: the real clock.
	Clock clock.Clock
}

// groupRule is one parsed GroupRoles entry.
type groupRule struct {
	group string
	grant Grant
}

// ParseGroupRole parses one "GROUP=ROLE[:PROJECT,...]" mapping.
func ParseGroupRole(s string) (group string, g Grant, err error) {
	group, spec, ok := strings.Cut(s, "=")
	if !ok || group == "" {
		return "", Grant{}, fmt.Errorf("group role %q: want GROUP=ROLE or GROUP=ROLE:PROJECT[,PROJECT...]", s)
	}
	role, projects, scoped := strings.Cut(spec, ":")
	r, err := ParseRole(role)
	if err != nil {
		return "", Grant{}, fmt.Errorf("group role %q: %w", s, err)
	}
	g = Grant{Role: r}
	if scoped {
		if r == Admin {
			return "", Grant{}, fmt.Errorf("group role %q: admin covers every project; give no projects", s)
		}
		for _, p := range strings.Split(projects, ",") {
			if p = strings.TrimSpace(p); p == "" {
				return "", Grant{}, fmt.Errorf("group role %q: an empty project name", s)
			}
			g.Projects = append(g.Projects, p)
		}
	}
	return group, g, nil
}

// OIDC verifies ID tokens and maps their subjects' groups to grants.
type OIDC struct {
	o      OIDCOptions
	rules  []groupRule
	client *http.Client // for the issuer

	mu       sync.Mutex
	provider *oidc.Provider        // nil until the issuer's discovery document was read
	verifier *oidc.IDTokenVerifier // of provider
}

// NewOIDC checks o; the issuer is contacted at the first Verify, so that a hub starts while
// its issuer is down (OIDC sign-in fails until it is back; tokens keep working).
func NewOIDC(o OIDCOptions) (*OIDC, error) {
	if o.ClientID == "" {
		return nil, errors.New("--oidc-issuer needs --oidc-client-id")
	}
	u, err := url.Parse(o.Issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("oidc issuer %q: want an https URL", o.Issuer)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) {
		return nil, fmt.Errorf("oidc issuer %q: want https (http only on a loopback address)", o.Issuer)
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	if o.KeyRefreshInterval <= 0 {
		o.KeyRefreshInterval = DefaultKeyRefreshInterval
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if len(o.GroupRoles) == 0 {
		return nil, errors.New("--oidc-issuer needs at least one --oidc-group-role: without one, nobody could sign in")
	}
	c := &OIDC{o: o, client: http.DefaultClient}
	if o.CAFile != "" {
		if c.client, err = hubclient.HTTPClientTrusting(o.CAFile); err != nil {
			return nil, err
		}
	}
	for _, s := range o.GroupRoles {
		group, g, err := ParseGroupRole(s)
		if err != nil {
			return nil, err
		}
		c.rules = append(c.rules, groupRule{group, g})
	}
	return c, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Issuer and ClientID are what `flotilla login` needs to start the device flow.
func (c *OIDC) Issuer() string   { return c.o.Issuer }
func (c *OIDC) ClientID() string { return c.o.ClientID }

// GroupsClaim is the claim that lists a subject's groups; clients ask for a scope of that
// name, which most issuers need to put it in the ID token.
func (c *OIDC) GroupsClaim() string { return c.o.GroupsClaim }

func (c *OIDC) getVerifier(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	if _, err := c.getProvider(ctx); err != nil {
		return nil, err
	}
	return c.verifier, nil
}

// getProvider reads the issuer's discovery document once it is reachable.
func (c *OIDC) getProvider(ctx context.Context) (*oidc.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(context.WithoutCancel(ctx), c.client), c.o.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc issuer %s: %w", c.o.Issuer, err)
	}
	var doc struct {
		JWKSURL string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := p.Claims(&doc); err != nil {
		return nil, fmt.Errorf("oidc issuer %s: %w", c.o.Issuer, err)
	}
	if doc.JWKSURL == "" {
		return nil, fmt.Errorf("oidc issuer %s: its discovery document names no jwks_uri", c.o.Issuer)
	}
	keys := &boundedKeySet{url: doc.JWKSURL, client: c.client, interval: c.o.KeyRefreshInterval, now: c.o.Clock.Now}
	c.provider = p
	c.verifier = oidc.NewVerifier(c.o.Issuer, keys, &oidc.Config{ClientID: c.o.ClientID, SupportedSigningAlgs: providerAlgs(doc.Algs), Now: c.o.Clock.Now})
	return c.provider, nil
}

// Verify checks raw, an ID token (signature, issuer, audience, expiry), and returns its
// subject as a principal ("oidc:SUBJECT") with the grants of its groups.
func (c *OIDC) Verify(ctx context.Context, raw string) (Principal, error) {
	v, err := c.getVerifier(ctx)
	if err != nil {
		return Principal{}, err
	}
	tok, err := v.Verify(ctx, raw)
	if err != nil {
		return Principal{}, fmt.Errorf("oidc: %w", err)
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Principal{}, fmt.Errorf("oidc: claims: %w", err)
	}
	groups := stringList(claims[c.o.GroupsClaim])
	p := Principal{Actor: "oidc:" + tok.Subject}
	for _, r := range c.rules {
		if slices.Contains(groups, r.group) {
			p.Grants = append(p.Grants, r.grant)
		}
	}
	if len(p.Grants) == 0 {
		return Principal{}, fmt.Errorf("oidc subject %q: none of its groups (claim %q: %s) is mapped to a role", tok.Subject, c.o.GroupsClaim, strings.Join(groups, ", "))
	}
	return p, nil
}

// stringList reads a claim that is a list of strings, or one string.
func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
