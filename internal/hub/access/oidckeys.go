package access

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// DefaultKeyRefreshInterval is how often, at most, a token signed with a key the hub does not
// hold makes it read the issuer's keys again (OIDCOptions.KeyRefreshInterval).
const DefaultKeyRefreshInterval = time.Minute

// maxJWKSBytes bounds the issuer's key set document: a few keys are a few KiB.
const maxJWKSBytes = 1 << 20

// signingAlgs are the JWS algorithms an ID token may be signed with (go-oidc's list).
var signingAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512,
	jose.PS256, jose.PS384, jose.PS512, jose.EdDSA,
}

// boundedKeySet is the issuer's signing keys (its jwks_uri), read again when a token names a
// key it lacks, as key rotation needs, but at most once per interval. go-oidc's own remote
// key set reads the keys again for every such token, so anyone could make the hub send the
// issuer one request per request they send, with tokens signed by keys of their own.
type boundedKeySet struct {
	url      string
	client   *http.Client
	interval time.Duration
	now      func() time.Time

	// fetching is held while the keys are read: tokens that arrive meanwhile with an unknown
	// key wait for that one read, not one each. mu guards keys and fetched only, so that a
	// token of a known key never waits for a slow issuer.
	fetching sync.Mutex
	mu       sync.Mutex
	keys     []jose.JSONWebKey
	fetched  time.Time // zero: never
}

// VerifySignature implements oidc.KeySet.
func (k *boundedKeySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(raw, signingAlgs) // an ID token is a JWT: compact serialization
	if err != nil {
		return nil, fmt.Errorf("malformed token: %w", err)
	}
	kid := ""
	if len(jws.Signatures) > 0 {
		kid = jws.Signatures[0].Header.KeyID
	}
	if keys, _ := k.held(); len(keys) > 0 {
		if payload, ok := verifyWith(jws, kid, keys); ok {
			return payload, nil
		}
	}
	k.fetching.Lock()
	defer k.fetching.Unlock()
	keys, fetched := k.held() // another token's read may have brought the key meanwhile
	if payload, ok := verifyWith(jws, kid, keys); ok {
		return payload, nil
	}
	if since := k.now().Sub(fetched); !fetched.IsZero() && since < k.interval {
		return nil, fmt.Errorf("token signed with key %q, not one of the issuer's keys read %s ago (read again at most every %s)",
			kid, since.Round(time.Second), k.interval)
	}
	if keys, err = k.fetch(ctx); err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.keys, k.fetched = keys, k.now()
	k.mu.Unlock()
	if payload, ok := verifyWith(jws, kid, keys); ok {
		return payload, nil
	}
	return nil, fmt.Errorf("token signed with key %q: no key of the issuer verifies it", kid)
}

// held returns the keys last read, and when.
func (k *boundedKeySet) held() ([]jose.JSONWebKey, time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.fetched
}

func verifyWith(jws *jose.JSONWebSignature, kid string, keys []jose.JSONWebKey) ([]byte, bool) {
	for _, key := range keys {
		if kid == "" || key.KeyID == kid {
			if payload, err := jws.Verify(&key); err == nil {
				return payload, true
			}
		}
	}
	return nil, false
}

// fetch reads the key set document, bounded in time and size.
func (k *boundedKeySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, fmt.Errorf("issuer keys %s: %w", k.url, err)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("issuer keys %s: %w", k.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("issuer keys %s: %s", k.url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("issuer keys %s: %w", k.url, err)
	}
	if len(data) > maxJWKSBytes {
		return nil, fmt.Errorf("issuer keys %s: larger than %d bytes", k.url, maxJWKSBytes)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("issuer keys %s: %w", k.url, err)
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("issuer keys %s: no keys", k.url)
	}
	return set.Keys, nil
}

// providerAlgs are the signing algorithms the discovery document names that signingAlgs
// has, as go-oidc's own provider keeps them; nil (go-oidc's default, RS256) when none.
func providerAlgs(names []string) []string {
	var out []string
	for _, n := range names {
		if slices.Contains(signingAlgs, jose.SignatureAlgorithm(n)) {
			out = append(out, n)
		}
	}
	return out
}
