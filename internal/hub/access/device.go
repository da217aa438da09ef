package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// DeviceStart is the start of a device-flow sign-in run by the hub for a browser (the
// dashboard): the page shows UserCode and VerificationURI, and polls with DeviceCode.
type DeviceStart struct {
	DeviceCode              string `json:"deviceCode"`
	UserCode                string `json:"userCode"`
	VerificationURI         string `json:"verificationURI"`
	VerificationURIComplete string `json:"verificationURIComplete,omitempty"`
	// Interval is how often, in seconds, the page may poll.
	Interval int       `json:"interval"`
	Expires  time.Time `json:"expires"`
}

// ErrPending: the user has not finished signing in yet; poll again after the interval.
var ErrPending = errors.New("sign-in pending")

func (c *OIDC) oauth2Config(ctx context.Context) (*oauth2.Config, error) {
	p, err := c.getProvider(ctx)
	if err != nil {
		return nil, err
	}
	ep := p.Endpoint()
	if ep.DeviceAuthURL == "" {
		return nil, fmt.Errorf("oidc issuer %s offers no device authorization endpoint", c.o.Issuer)
	}
	return &oauth2.Config{ClientID: c.o.ClientID, Endpoint: ep, Scopes: c.Scopes()}, nil
}

// Scopes are those a sign-in asks for: openid, profile, email and the groups claim's name.
func (c *OIDC) Scopes() []string { return []string{"openid", "profile", "email", c.o.GroupsClaim} }

// StartDevice asks the issuer for a device code, on behalf of a browser that cannot reach
// the issuer's endpoints itself (they seldom allow cross-origin requests).
func (c *OIDC) StartDevice(ctx context.Context) (DeviceStart, error) {
	cfg, err := c.oauth2Config(ctx)
	if err != nil {
		return DeviceStart{}, err
	}
	r, err := cfg.DeviceAuth(oidc.ClientContext(ctx, c.client))
	if err != nil {
		return DeviceStart{}, fmt.Errorf("oidc issuer %s: device authorization: %w", c.o.Issuer, err)
	}
	interval := int(r.Interval)
	if interval <= 0 {
		interval = 5
	}
	return DeviceStart{DeviceCode: r.DeviceCode, UserCode: r.UserCode, VerificationURI: r.VerificationURI,
		VerificationURIComplete: r.VerificationURIComplete, Interval: interval, Expires: r.Expiry}, nil
}

// PollDevice asks the issuer once whether the sign-in of deviceCode is done: the ID token
// when it is, ErrPending while it is not, another error when it was denied or expired. The
// ID token is verified and mapped (Verify) before it is returned.
func (c *OIDC) PollDevice(ctx context.Context, deviceCode string) (string, Principal, error) {
	cfg, err := c.oauth2Config(ctx)
	if err != nil {
		return "", Principal{}, err
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {deviceCode}, "client_id": {c.o.ClientID}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.Endpoint.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", Principal{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return "", Principal{}, fmt.Errorf("oidc issuer %s: %w", c.o.Issuer, err)
	}
	defer resp.Body.Close()
	var body struct {
		IDToken     string `json:"id_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := json.Unmarshal(data, &body); err != nil {
		return "", Principal{}, fmt.Errorf("oidc issuer %s: token endpoint answered %s", c.o.Issuer, resp.Status)
	}
	switch body.Error {
	case "":
	case "authorization_pending", "slow_down":
		return "", Principal{}, ErrPending
	default:
		return "", Principal{}, fmt.Errorf("oidc issuer %s: %s %s", c.o.Issuer, body.Error, body.Description)
	}
	if body.IDToken == "" {
		return "", Principal{}, fmt.Errorf("oidc issuer %s returned no ID token", c.o.Issuer)
	}
	p, err := c.Verify(ctx, body.IDToken)
	if err != nil {
		return "", Principal{}, err
	}
	return body.IDToken, p, nil
}
