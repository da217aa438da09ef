package access_test

import (
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/oidctest"
)

// TestOIDCIssuerCA: an issuer whose certificate a private CA signed is reached only when that
// CA is given; and the options are checked before any issuer is contacted.
func TestOIDCIssuerCA(t *testing.T) {
	t.Parallel()
	iss := oidctest.Start(t, "flotilla", nil)
	o := access.OIDCOptions{Issuer: iss.URL, ClientID: "flotilla", GroupRoles: []string{"sre=viewer"}}
	without, err := access.NewOIDC(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := without.StartDevice(t.Context()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
	o.CAFile = iss.CAFile
	with, err := access.NewOIDC(o)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := with.StartDevice(t.Context()); err != nil || s.UserCode == "" {
		t.Errorf("with the CA: %+v %v", s, err)
	}

	for _, bad := range []access.OIDCOptions{
		{Issuer: "http://login.example.com", ClientID: "x", GroupRoles: []string{"a=viewer"}}, // plain http off loopback
		{Issuer: iss.URL, GroupRoles: []string{"a=viewer"}},                                   // no client ID
		{Issuer: iss.URL, ClientID: "x"},                                                      // nobody could sign in
		{Issuer: iss.URL, ClientID: "x", GroupRoles: []string{"a=owner"}},                     // no such role
	} {
		if _, err := access.NewOIDC(bad); err == nil {
			t.Errorf("NewOIDC(%+v) took it", bad)
		}
	}
}
