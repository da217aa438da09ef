package pki

import (
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestServingCertificate(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	hosts := []string{"hub.example.com", "127.0.0.1", "::1", "localhost", "10.1.2.3"}
	cert, err := ca.ServingCertificate(hosts, 30*24*time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if len(cert.Certificate) != 2 || !slices.Equal(cert.Certificate[1], ca.Certificate().Raw) {
		t.Error("chain is not [leaf, CA]")
	}
	if got, want := leaf.DNSNames, []string{"hub.example.com", "localhost"}; !slices.Equal(got, want) {
		t.Errorf("DNSNames = %v, want %v", got, want)
	}
	wantIPs := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP("10.1.2.3")}
	if !slices.EqualFunc(leaf.IPAddresses, wantIPs, net.IP.Equal) {
		t.Errorf("IPAddresses = %v, want %v", leaf.IPAddresses, wantIPs)
	}
	for _, h := range hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{
			DNSName:     h,
			Roots:       ca.Pool(),
			CurrentTime: testNow,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}); err != nil {
			t.Errorf("verify for %s: %v", h, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: testNow, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("serving certificate is usable for client authentication")
	}
	if want := testNow.Add(30 * 24 * time.Hour); !leaf.NotAfter.Equal(want) {
		t.Errorf("NotAfter = %v, want %v", leaf.NotAfter, want)
	}
}

func TestServingCertificateErrors(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	tests := []struct {
		name    string
		hosts   []string
		ttl     time.Duration
		wantErr string
	}{
		{name: "no hosts", ttl: time.Hour, wantErr: "serving certificate: no hosts"},
		{name: "empty host", hosts: []string{"hub", ""}, ttl: time.Hour, wantErr: "empty host"},
		{name: "no lifetime", hosts: []string{"hub"}, wantErr: "lifetime 0s: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ca.ServingCertificate(tt.hosts, tt.ttl, testNow)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ServingCertificate() error = %s, want it to contain %q", errString(err), tt.wantErr)
			}
		})
	}
}
