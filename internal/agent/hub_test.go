package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// fakeHub is the hub's side of the agent protocol over real TLS, enough of it to drive a real
// agent through desired states that the real hub never sends (a document that drops a
// release without a tombstone, one from a hub older than tombstones) and to see every
// heartbeat and report the agent sends.
type fakeHub struct {
	agentv1connect.UnimplementedAgentServiceHandler
	t         *testing.T
	srv       *httptest.Server
	ca        *pki.CA
	artifacts map[string][]byte // digest -> tar.gz

	mu         sync.Mutex
	desired    *agentv1.DesiredState
	changed    chan struct{} // closed and replaced by every publish
	heartbeats []*agentv1.HeartbeatRequest
	statuses   []*agentv1.AssignmentStatus
	renewals   int
	// holdReports makes Report fail as if the hub were unreachable, so reports queue up.
	holdReports bool
	// refusedReports counts Report calls refused for naming a release outside the desired state.
	refusedReports int
	cluster        string // of the last identity written
}

func newFakeHub(t *testing.T) *fakeHub {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHub{t: t, ca: ca, artifacts: map[string][]byte{}, changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle(agentv1connect.NewAgentServiceHandler(h))
	mux.HandleFunc("GET /artifacts/sha256/{hex}", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		data, ok := h.artifacts["sha256:"+r.PathValue("hex")]
		h.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data) // an HTTP response: a failed write has nobody to tell
	})
	cert, err := ca.ServingCertificate([]string{"127.0.0.1"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewUnstartedServer(mux)
	h.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	h.srv.EnableHTTP2 = true
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	return h
}

// identity writes into dir the identity an agent of cluster would have after joining this hub.
func (h *fakeHub) identity(dir, cluster string) {
	h.t.Helper()
	h.mu.Lock()
	h.cluster = cluster
	h.mu.Unlock()
	writeIdentity(h.t, h.ca, dir, cluster, h.srv.URL)
}

// addArtifact packs files (slash-separated path -> content) and serves the artifact; it
// returns its digest.
func (h *fakeHub) addArtifact(files map[string]string) string {
	h.t.Helper()
	dir := h.t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	digest, _, err := artifact.Pack(h.t.Context(), dir, &buf)
	if err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.artifacts[digest] = buf.Bytes()
	h.mu.Unlock()
	return digest
}

// publish makes ds the cluster's desired state; watching agents get it at once.
func (h *fakeHub) publish(ds *agentv1.DesiredState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.desired = proto.Clone(ds).(*agentv1.DesiredState)
	close(h.changed)
	h.changed = make(chan struct{})
}

func (h *fakeHub) Watch(ctx context.Context, req *connect.Request[agentv1.WatchRequest], stream *connect.ServerStream[agentv1.WatchResponse]) error {
	known := req.Msg.GetKnownGeneration()
	for {
		h.mu.Lock()
		ds, changed := h.desired, h.changed
		h.mu.Unlock()
		if ds != nil && ds.Generation != known {
			if err := stream.Send(&agentv1.WatchResponse{Desired: ds}); err != nil {
				return err
			}
			known = ds.Generation
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

func (h *fakeHub) Heartbeat(_ context.Context, req *connect.Request[agentv1.HeartbeatRequest]) (*connect.Response[agentv1.HeartbeatResponse], error) {
	h.mu.Lock()
	h.heartbeats = append(h.heartbeats, proto.Clone(req.Msg).(*agentv1.HeartbeatRequest))
	h.mu.Unlock()
	return connect.NewResponse(&agentv1.HeartbeatResponse{}), nil
}

// Report acks every report, unless one names a release that the current desired state
// neither assigns nor tombstones: then, as the real hub does, it refuses the whole call.
func (h *fakeHub) Report(_ context.Context, req *connect.Request[agentv1.ReportRequest]) (*connect.Response[agentv1.ReportResponse], error) {
	resp := &agentv1.ReportResponse{}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holdReports {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("reports held by the test"))
	}
	known := map[string]bool{}
	for _, as := range h.desired.GetAssignments() {
		known[as.Release] = true
	}
	for _, t := range h.desired.GetRemoved() {
		known[t.Release] = true
	}
	for _, r := range req.Msg.GetReports() {
		for _, st := range r.GetStatuses() {
			if !known[st.Release] {
				h.refusedReports++
				return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("report %d: release %q is not in the desired state", r.GetSeq(), st.Release))
			}
		}
	}
	for _, r := range req.Msg.GetReports() {
		h.statuses = append(h.statuses, r.GetStatuses()...)
		resp.Acked = append(resp.Acked, r.GetSeq())
	}
	return connect.NewResponse(resp), nil
}

// Renew signs the agent's new key for a day, as the real hub does for its certificate TTL.
func (h *fakeHub) Renew(_ context.Context, req *connect.Request[agentv1.RenewRequest]) (*connect.Response[agentv1.RenewResponse], error) {
	h.mu.Lock()
	h.renewals++
	h.mu.Unlock()
	certPEM, _, _, err := h.ca.SignAgentCSR(req.Msg.GetCsrPem(), h.cluster, 24*time.Hour, time.Now())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	return connect.NewResponse(&agentv1.RenewResponse{CertificatePem: certPEM}), nil
}

// lastHeartbeat is the newest heartbeat, or nil.
func (h *fakeHub) lastHeartbeat() *agentv1.HeartbeatRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.heartbeats) == 0 {
		return nil
	}
	return h.heartbeats[len(h.heartbeats)-1]
}

// reported counts the statuses received so far that match.
func (h *fakeHub) reported(match func(*agentv1.AssignmentStatus) bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, st := range h.statuses {
		if match(st) {
			n++
		}
	}
	return n
}

// dump describes what the hub received, for failure messages.
func (h *fakeHub) dump() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, st := range h.statuses[max(len(h.statuses)-20, 0):] {
		b.WriteString("report: " + st.Release + " generation " + itoa(st.Generation) + " " + st.Phase + " " + st.Error + "\n")
	}
	if n := len(h.heartbeats); n > 0 {
		hb := h.heartbeats[n-1]
		b.WriteString("last heartbeat: generation " + itoa(hb.Generation) + " refused " + itoa(hb.RefusedGeneration) + " " + hb.RefusedReason + "\n")
	}
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// holds is cond as a condition for eventually.Within: while it does not hold, the error
// names what is awaited and shows the hub's view.
func (h *fakeHub) holds(what string, cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("%s: not yet\n%s", what, h.dump())
	}
}

// writeIdentity writes into dir the identity an agent of cluster has after joining the hub
// at hubURL whose agent CA is ca.
func writeIdentity(t *testing.T, ca *pki.CA, dir, cluster, hubURL string) {
	t.Helper()
	key, err := pki.NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.CreateCSR(key, cluster)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, _, err := ca.SignAgentCSR(csr, cluster, 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openState(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if err := st.saveIdentity(&identity{Cluster: cluster, HubURL: hubURL, KeyPEM: keyPEM, CertPEM: certPEM, CAPEM: ca.CertPEM()}); err != nil {
		t.Fatal(err)
	}
}
