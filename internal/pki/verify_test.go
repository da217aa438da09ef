package pki

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestVerifyAgent(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	other := newTestCA(t)
	good := newAgentCert(t, ca, "prod.eu-west-1", 24*time.Hour)
	foreign := newAgentCert(t, other, "prod.eu-west-1", 24*time.Hour)
	serving, err := ca.ServingCertificate([]string{"hub.example.com"}, 24*time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		raw         [][]byte
		now         time.Time
		wantCluster string
		wantErr     string
	}{
		{name: "hub-signed", raw: [][]byte{good.cert.Raw}, now: testNow, wantCluster: "prod.eu-west-1"},
		{name: "hub-signed with the CA in the chain", raw: [][]byte{good.cert.Raw, ca.Certificate().Raw}, now: testNow, wantCluster: "prod.eu-west-1"},
		{name: "hub-signed, just before expiry", raw: [][]byte{good.cert.Raw}, now: good.cert.NotAfter, wantCluster: "prod.eu-west-1"},
		{name: "another CA", raw: [][]byte{foreign.cert.Raw}, now: testNow, wantErr: "certificate signed by unknown authority"},
		{name: "another CA presenting ours as intermediate", raw: [][]byte{foreign.cert.Raw, ca.Certificate().Raw}, now: testNow, wantErr: "certificate signed by unknown authority"},
		{name: "expired", raw: [][]byte{good.cert.Raw}, now: good.cert.NotAfter.Add(time.Second), wantErr: "certificate has expired or is not yet valid"},
		{name: "not yet valid", raw: [][]byte{good.cert.Raw}, now: testNow.Add(-time.Hour), wantErr: "certificate has expired or is not yet valid"},
		{name: "serving certificate", raw: [][]byte{serving.Certificate[0]}, now: testNow, wantErr: "incompatible key usage"},
		{name: "the CA itself has no cluster", raw: [][]byte{ca.Certificate().Raw}, now: testNow, wantErr: "no flotilla:// URI SAN"},
		{name: "nothing presented", now: testNow, wantErr: "agent certificate: none presented"},
		{name: "garbage", raw: [][]byte{[]byte("garbage")}, now: testNow, wantErr: "agent certificate: chain entry 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, serial, err := ca.VerifyAgent(tt.raw, tt.now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("VerifyAgent() = %q, %q, %s; want error containing %q", cluster, serial, errString(err), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("VerifyAgent(): %v", err)
			}
			if cluster != tt.wantCluster || serial != good.serial {
				t.Errorf("VerifyAgent() = %q, %q; want %q, %q", cluster, serial, tt.wantCluster, good.serial)
			}
		})
	}
}

// TestVerifyAgentOverTLS runs the hub's side of mutual TLS as the hub would: the TLS layer
// demands a certificate, and the handler decides with VerifyAgent at the hub's clock.
func TestVerifyAgentOverTLS(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	other := newTestCA(t)
	good := newAgentCert(t, ca, "edge-42", 24*time.Hour)
	foreign := newAgentCert(t, other, "edge-42", 24*time.Hour)

	tests := []struct {
		name       string
		client     agentCert
		hubNow     time.Time
		wantStatus int
		wantBody   string
	}{
		{name: "accepts a hub-signed certificate", client: good, hubNow: testNow, wantStatus: http.StatusOK, wantBody: "edge-42 " + good.serial},
		{name: "rejects a certificate from another CA", client: foreign, hubNow: testNow, wantStatus: http.StatusForbidden, wantBody: "unknown authority"},
		{name: "rejects an expired certificate", client: good, hubNow: testNow.Add(25 * time.Hour), wantStatus: http.StatusForbidden, wantBody: "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newHubServer(t, ca, tt.hubNow)
			tr := &http.Transport{TLSClientConfig: &tls.Config{
				RootCAs:      ca.Pool(),
				Certificates: []tls.Certificate{tt.client.tls()},
				Time:         clockAt(testNow),
			}}
			defer tr.CloseIdleConnections()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("got %d %q, want %d containing %q", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}

// newHubServer serves HTTPS on 127.0.0.1 with a hub serving certificate, answering with the
// verified identity of the client or 403.
func newHubServer(t *testing.T, ca *CA, now time.Time) *httptest.Server {
	t.Helper()
	cert, err := ca.ServingCertificate([]string{"127.0.0.1", "localhost"}, 24*time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := make([][]byte, len(r.TLS.PeerCertificates))
		for i, c := range r.TLS.PeerCertificates {
			raw[i] = c.Raw
		}
		cluster, serial, err := ca.VerifyAgent(raw, now)
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		fmt.Fprintf(w, "%s %s", cluster, serial)
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAnyClientCert,
		Time:         clockAt(testNow),
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}
