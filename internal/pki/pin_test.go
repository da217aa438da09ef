package pki

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"
)

// TestPinnedVerifier runs real TLS handshakes on 127.0.0.1 between a server presenting
// various chains and an agent that knows only a fingerprint prefix.
func TestPinnedVerifier(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	other := newTestCA(t)
	serving := func(ca *CA) tls.Certificate {
		c, err := ca.ServingCertificate([]string{"hub.example.com"}, 24*time.Hour, testNow)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	hub := serving(ca)
	impostor := serving(other)
	agent := newAgentCert(t, ca, "prod", 24*time.Hour).tls()
	pin := ca.Fingerprint()[:32]

	tests := []struct {
		name    string
		chain   tls.Certificate // what the server presents
		pin     string
		now     time.Time
		wantErr string // "" for a completed handshake
	}{
		{name: "accepts the pinned hub", chain: hub, pin: pin},
		{name: "accepts the full fingerprint", chain: hub, pin: ca.Fingerprint()},
		{name: "accepts an upper-case pin", chain: hub, pin: strings.ToUpper(pin)},
		{
			name: "rejects another CA", chain: impostor, pin: pin,
			wantErr: "no CA with fingerprint",
		},
		{
			name: "rejects another CA's leaf beside the pinned CA", pin: pin,
			chain:   withChain(impostor, impostor.Certificate[0], ca.Certificate().Raw),
			wantErr: "not issued by the pinned CA",
		},
		{
			name: "rejects a chain without the CA", pin: pin,
			chain:   withChain(hub, hub.Certificate[0]),
			wantErr: "no CA with fingerprint",
		},
		{
			name: "rejects an agent posing as the hub", pin: pin,
			chain:   withChain(agent, agent.Certificate[0], ca.Certificate().Raw),
			wantErr: "incompatible key usage",
		},
		{
			name: "rejects an expired serving certificate", chain: hub, pin: pin, now: testNow.Add(25 * time.Hour),
			wantErr: "expired",
		},
		{
			name: "rejects a pin that would match anything", chain: hub, pin: "",
			wantErr: "want 32 to 64 hex digits",
		},
		{
			name: "rejects a short pin", chain: hub, pin: pin[:16],
			wantErr: "want 32 to 64 hex digits",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := tt.now
			if now.IsZero() {
				now = testNow
			}
			addr := serveTLS(t, tt.chain)
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: &tls.Config{
				InsecureSkipVerify:    true,
				VerifyPeerCertificate: pinnedVerifier(tt.pin, clockAt(now)),
			}}
			conn, err := d.DialContext(t.Context(), "tcp", addr)
			if err == nil {
				conn.Close()
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("handshake: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("handshake error = %s, want one containing %q", errString(err), tt.wantErr)
			}
		})
	}
}

// TestPinnedVerifierWallClock checks the exported verifier, which reads the wall clock.
func TestPinnedVerifierWallClock(t *testing.T) {
	t.Parallel()
	ca, err := LoadOrCreateCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	hub, err := ca.ServingCertificate([]string{"127.0.0.1"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	verify := PinnedVerifier(ca.Fingerprint()[:32])
	if err := verify(hub.Certificate, nil); err != nil {
		t.Errorf("PinnedVerifier: %v", err)
	}
}

func withChain(c tls.Certificate, chain ...[]byte) tls.Certificate {
	c.Certificate = chain
	c.Leaf = nil
	return c
}

// serveTLS accepts one connection on 127.0.0.1, completes (or fails) the handshake with cert
// and closes it; the test waits for that before it ends.
func serveTLS(t *testing.T, cert tls.Certificate) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		Time:         clockAt(testNow),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Error(err)
			return
		}
		// The handshake fails whenever the client rejects the chain; that is the point.
		_ = conn.(*tls.Conn).HandshakeContext(t.Context())
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}
