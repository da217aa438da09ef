package hub

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"time"

	"connectrpc.com/connect"
)

func serverTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
}

// agentTLS asks for a client certificate but does not require one, because Join is made
// before the agent has one; every other route requires it (requireAgent).
func (h *Hub) agentTLS(cert tls.Certificate) *tls.Config {
	cfg := serverTLS(cert)
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	cfg.ClientCAs = h.ca.Pool()
	return cfg
}

type clusterKey struct{}

// clusterFrom returns the cluster identity requireAgent established for this request.
func clusterFrom(ctx context.Context) string {
	c, _ := ctx.Value(clusterKey{}).(string)
	return c
}

// requireAgent authorises each request from the client certificate: signed by the hub's CA,
// naming a cluster, and not revoked. Both answers are reused for the same certificate
// (agentAuth): the verification while the certificate is valid, the store's "not revoked"
// for a while, except that removing a cluster forgets its certificates at once, so a removed
// cluster is locked out on its next request, not when its certificate expires.
func (h *Hub) requireAgent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			h.deny(w, r, connect.CodeUnauthenticated, "a client certificate is required: join first")
			return
		}
		raw := make([][]byte, len(r.TLS.PeerCertificates))
		for i, c := range r.TLS.PeerCertificates {
			raw[i] = c.Raw
		}
		now := h.now()
		key := chainKey(raw)
		e, verified, fresh, epoch := h.auth.lookup(key, now)
		if !verified {
			cluster, serial, err := h.ca.VerifyAgent(raw, now)
			if err != nil {
				h.deny(w, r, connect.CodeUnauthenticated, err.Error())
				return
			}
			e = authEntry{cluster: cluster, serial: serial, notBefore: h.ca.Certificate().NotBefore, notAfter: h.ca.Certificate().NotAfter}
			for _, c := range r.TLS.PeerCertificates {
				e.notBefore, e.notAfter = latest(e.notBefore, c.NotBefore), earliest(e.notAfter, c.NotAfter)
			}
		}
		if !fresh {
			ok, err := h.store.CertificateValid(r.Context(), e.serial, e.cluster)
			if err != nil {
				h.deny(w, r, connect.CodeUnavailable, "check certificate: "+err.Error())
				return
			}
			if !ok {
				h.deny(w, r, connect.CodePermissionDenied, "cluster "+e.cluster+": certificate revoked or cluster removed")
				return
			}
			e.checked = now
			h.auth.put(key, e, epoch)
		}
		h.seen.touch(e.cluster, "")
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clusterKey{}, e.cluster)))
	})
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// deny answers with a Connect error, in whichever of the Connect, gRPC or gRPC-Web shapes the
// request used (streams included), so that clients decode the code; plain HTTP clients get
// the status code that goes with it.
func (h *Hub) deny(w http.ResponseWriter, r *http.Request, code connect.Code, msg string) {
	_ = h.errs.Write(w, r, connect.NewError(code, errors.New(msg)))
}
