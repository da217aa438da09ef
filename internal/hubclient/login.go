package hubclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// DeviceCode is what the user is asked to do during a device-flow sign-in: open URI (or
// URIComplete, which holds the code) and enter UserCode.
type DeviceCode struct {
	URI, URIComplete, UserCode string
}

// DeviceLogin signs in at the issuer with the OAuth 2.0 device authorization grant (RFC
// 8628) and returns the ID token, which the hub takes as a bearer token. prompt is called
// once, with what the user must do; DeviceLogin then polls the issuer until the user has
// approved, denied, or the code expired, or ctx ends. hc, if not nil, is the HTTP client for
// the issuer.
func DeviceLogin(ctx context.Context, info OIDCInfo, hc *http.Client, prompt func(DeviceCode)) (string, error) {
	if hc != nil {
		ctx = oidc.ClientContext(ctx, hc)
	}
	p, err := oidc.NewProvider(ctx, info.Issuer)
	if err != nil {
		return "", fmt.Errorf("oidc issuer %s: %w", info.Issuer, err)
	}
	ep := p.Endpoint()
	if ep.DeviceAuthURL == "" {
		return "", fmt.Errorf("oidc issuer %s offers no device authorization endpoint: sign in another way and pass the ID token with --token", info.Issuer)
	}
	scopes := info.Scopes
	if len(scopes) == 0 {
		scopes = []string{oidc.ScopeOpenID}
	}
	cfg := oauth2.Config{ClientID: info.ClientID, Endpoint: ep, Scopes: scopes}
	auth, err := cfg.DeviceAuth(ctx)
	if err != nil {
		return "", fmt.Errorf("oidc issuer %s: device authorization: %w", info.Issuer, err)
	}
	prompt(DeviceCode{URI: auth.VerificationURI, URIComplete: auth.VerificationURIComplete, UserCode: auth.UserCode})
	tok, err := cfg.DeviceAccessToken(ctx, auth)
	if err != nil {
		return "", fmt.Errorf("oidc issuer %s: %w", info.Issuer, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", errors.New("oidc issuer " + info.Issuer + " returned no ID token (is the openid scope allowed for client " + info.ClientID + "?)")
	}
	// Checked here too, so that a wrong issuer or client fails at sign-in rather than at
	// the first call.
	if _, err := p.Verifier(&oidc.Config{ClientID: info.ClientID}).Verify(ctx, raw); err != nil {
		return "", fmt.Errorf("oidc issuer %s: the ID token: %w", info.Issuer, err)
	}
	return raw, nil
}

// HTTPClientTrusting is an HTTP client that trusts the PEM certificates in caFile besides the
// system's roots: for an OIDC issuer whose certificate a private CA signed.
func HTTPClientTrusting(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("oidc CA: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("oidc CA %s: no PEM certificate in it", caFile)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}, nil
}
