package fleetsim

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/pki"
)

// pushEndpoints are the simulated clusters' API endpoints in push mode: one HTTPS listener in
// this process; each cluster has its own path, and the push controller its own connection to
// each. An apply stores the object's hash in the cluster's MemCluster and answers with the
// object, as an API server answers a server-side apply.
type pushEndpoints struct {
	clusters map[string]*MemCluster
	meter    meter
	srv      *http.Server
	url      string
	caFile   string
}

// maxObjectBytes bounds one pushed object.
const maxObjectBytes = 4 << 20

func startPushEndpoints(dir string, clusters []*MemCluster) (*pushEndpoints, error) {
	ca, err := pki.LoadOrCreateCA(dir, time.Now())
	if err != nil {
		return nil, err
	}
	cert, err := ca.ServingCertificate([]string{"127.0.0.1", "localhost"}, 24*time.Hour, time.Now())
	if err != nil {
		return nil, err
	}
	caFile := filepath.Join(dir, "endpoints-ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o644); err != nil {
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &pushEndpoints{clusters: map[string]*MemCluster{}, caFile: caFile, url: "https://" + ln.Addr().String()}
	for _, c := range clusters {
		e.clusters[c.Name()] = c
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /clusters/{cluster}/assignments/{assignment}/objects", e.apply)
	e.srv = &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.meter.requests.Add(1); mux.ServeHTTP(w, r) }),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	go func() { _ = e.srv.ServeTLS(countedListener{Listener: ln, m: &e.meter}, "", "") }()
	return e, nil
}

func (e *pushEndpoints) apply(w http.ResponseWriter, r *http.Request) {
	c := e.clusters[r.PathValue("cluster")]
	if c == nil {
		http.Error(w, "no such cluster", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxObjectBytes+1))
	if err != nil || len(body) > maxObjectBytes {
		http.Error(w, "object unreadable or too large", http.StatusBadRequest)
		return
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, id, content, err := hashObject(u, "")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.apply(r.PathValue("assignment"), id, content)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (e *pushEndpoints) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		_ = e.srv.Close() // the forced close after a failed shutdown: nothing else to try
	}
}
