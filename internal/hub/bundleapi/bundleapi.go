// Package bundleapi serves the user-facing routes for air-gapped sites (docs/airgap.md):
// exporting a cluster's desired state and artifacts as a bundle signed by the hub's CA, and
// importing the reports an agent wrote to a file, verified against its certificate and
// ingested exactly as online reports are. The hub serves both on the httpapi.Server beside
// the other user-facing APIs, for deployers of every project and admins, and audits them.
package bundleapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/bundle"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Store is the part of the hub's store the routes use.
type Store interface {
	// GetCluster returns the named cluster or store.ErrNotFound.
	GetCluster(ctx context.Context, name string) (store.Cluster, error)
	// GetDesiredState returns the cluster's stored document, or store.ErrNotFound.
	GetDesiredState(ctx context.Context, cluster string) (store.DesiredState, error)
	// ReportStats says, among others, the highest report seq ingested from the cluster.
	ReportStats(ctx context.Context, cluster string) (store.ReportStats, error)
	// CertificateValid reports whether serial was issued to cluster and is not revoked.
	CertificateValid(ctx context.Context, serial, cluster string) (bool, error)
}

// Deps are what the routes need; EnsureArtifact, Record, Clock and Logger may be nil.
type Deps struct {
	Store     Store
	Artifacts *artifact.Store
	// EnsureArtifact fetches an artifact this replica lacks from the shared store.
	EnsureArtifact func(ctx context.Context, digest string) error
	// CA signs bundles and verifies the certificates of reports files.
	CA *pki.CA
	// Ingest is the agent endpoint's ingestion (agentapi.Server.IngestReports).
	Ingest func(ctx context.Context, cluster string, reports []*agentv1.Report) ([]uint64, error)
	// Record writes an audit record; it never fails the caller.
	Record func(ctx context.Context, e audit.Event)
	Clock  clock.Clock
	Logger *slog.Logger
	// ReportsLimits bound an imported reports file; zero fields take
	// bundle.DefaultReportsLimits.
	ReportsLimits bundle.ReportsLimits
}

// API serves the routes.
type API struct {
	d      Deps
	limits bundle.ReportsLimits
}

// New returns the routes' API.
func New(d Deps) *API {
	d.Clock = clock.Or(d.Clock)
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Record == nil {
		d.Record = func(context.Context, audit.Event) {}
	}
	lim, def := d.ReportsLimits, bundle.DefaultReportsLimits()
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = def.MaxBytes
	}
	if lim.MaxReports <= 0 {
		lim.MaxReports = def.MaxReports
	}
	return &API{d: d, limits: lim}
}

// Routes are the authenticated routes, for an httpapi.Server. A bundle holds what every
// release of a cluster delivers, and imported reports change the fleet's status: both need a
// deployer of every project (or an admin).
func (a *API) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET /api/v1/bundles/{cluster}", Rule: httpapi.RuleDeployFleet, Handler: http.HandlerFunc(a.export)},
		{Pattern: "POST /api/v1/reports/import", Rule: httpapi.RuleDeployFleet, Handler: http.HandlerFunc(a.importReports)},
	}
}

// export streams the cluster's bundle. Everything that can fail before the first byte (the
// cluster, its desired state, its artifacts) is answered as an error document; a failure
// later (a corrupt artifact on disk) cuts the stream, which the client reports as incomplete.
func (a *API) export(w http.ResponseWriter, r *http.Request) {
	ctx, cluster := r.Context(), r.PathValue("cluster")
	if _, err := a.d.Store.GetCluster(ctx, cluster); err != nil {
		httpapi.WriteStoreError(w, err, fmt.Sprintf("cluster %q", cluster))
		return
	}
	stored, err := a.d.Store.GetDesiredState(ctx, cluster)
	if errors.Is(err, store.ErrNotFound) {
		httpapi.WriteError(w, http.StatusConflict, fmt.Errorf("cluster %q has no desired state yet: the hub has not scheduled it (are its sources fetched?)", cluster))
		return
	}
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	doc, err := desired.DecodeDocument(stored.Document)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, fmt.Errorf("desired state of cluster %q: %w", cluster, err))
		return
	}
	ds := desired.FromHub(stored.Cluster, stored.Generation, doc)
	stats, err := a.d.Store.ReportStats(ctx, cluster)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, fmt.Errorf("reports of cluster %q: %w", cluster, err))
		return
	}
	var total int64
	for _, d := range bundle.NeededDigests(ds.Assignments) {
		if a.d.EnsureArtifact != nil {
			if err := a.d.EnsureArtifact(ctx, d); err != nil {
				a.d.Logger.Warn("artifact not fetched from the shared store", "digest", d, "error", err)
			}
		}
		st, err := a.stat(d)
		if err == nil {
			total += st.Size()
		}
		if err != nil {
			httpapi.WriteError(w, http.StatusInternalServerError, fmt.Errorf("bundle of cluster %q: artifact %s: %w", cluster, d, err))
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-tar")
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", fmt.Sprintf("%s-%d.bundle", cluster, ds.Generation)))
	h.Set(hubclient.HeaderBundleGeneration, strconv.FormatInt(ds.Generation, 10))
	h.Set(hubclient.HeaderBundleBytes, strconv.FormatInt(total, 10))
	cw := &countingWriter{w: w}
	m, err := bundle.Write(ctx, cw, bundle.WriteOptions{
		Desired: ds, CreatedAt: a.d.Clock.Now(), ReportsIngestedThrough: stats.LastSeq,
		CA: a.d.CA.Certificate(), Signer: a.d.CA.Signer(), Open: a.open,
	})
	if err != nil {
		a.d.Logger.Error("bundle export failed", "cluster", cluster, "generation", ds.Generation, "error", err)
		if cw.n == 0 {
			httpapi.WriteError(w, http.StatusInternalServerError, err)
			return
		}
		// Headers and part of the body are out: cutting the connection is the only way left
		// to tell the client the file is incomplete.
		panic(http.ErrAbortHandler)
	}
	a.d.Record(ctx, httpapi.WithRole(ctx, audit.Event{Action: "bundle.exported", Cluster: cluster, Detail: map[string]any{
		"generation": ds.Generation, "artifacts": len(m.Artifacts), "bytes": cw.n, "reportsIngestedThrough": m.ReportsIngestedThrough,
	}}))
	a.d.Logger.Info("bundle exported", "cluster", cluster, "generation", ds.Generation, "artifacts", len(m.Artifacts), "bytes", cw.n, "actor", httpapi.Actor(ctx))
}

func (a *API) open(_ context.Context, digest string) (io.ReadCloser, int64, error) {
	f, err := a.d.Artifacts.Open(digest)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close() // already failing: the first error is the one returned
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// importReports verifies a reports file (the agent's signature, its certificate against the
// CA at the time the file says it was written, and against the store: a revoked certificate
// or removed cluster is refused) and ingests its reports one by one through the agent
// endpoint's ingestion, so that (cluster, seq) dedup applies and one report the hub will
// never take does not hold back the rest.
func (a *API) importReports(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if r.ContentLength > a.limits.MaxBytes {
		httpapi.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("reports file: %d bytes; at most %d", r.ContentLength, a.limits.MaxBytes))
		return
	}
	body := http.MaxBytesReader(w, r.Body, a.limits.MaxBytes+1)
	rf, err := bundle.ReadReports(body, a.limits)
	if err != nil {
		status := http.StatusBadRequest
		var tooLarge *bundle.TooLargeError
		if errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		httpapi.WriteError(w, status, err)
		return
	}
	m := rf.Manifest
	now := a.d.Clock.Now()
	// The chain is checked (this CA signed it, for client authentication) at a time inside
	// the certificate's validity: an agent cut off from the hub cannot renew its certificate,
	// and an expired one must not strand its reports. What ends an agent's trust is
	// revocation (`flotilla cluster rotate`), checked in the store, now. The time the file
	// says it was written is the agent's clock's, recorded only: a site's clock may be off.
	cert := rf.Certificate
	at := m.CreatedAt
	if at.After(cert.NotAfter) {
		at = cert.NotAfter
	}
	if at.Before(cert.NotBefore) {
		at = cert.NotBefore
	}
	cluster, serial, err := a.d.CA.VerifyAgent([][]byte{cert.Raw}, at)
	if err != nil {
		httpapi.WriteError(w, http.StatusForbidden, fmt.Errorf("reports file of cluster %q: not signed by an agent of this hub: %w", m.Cluster, err))
		return
	}
	if cluster != m.Cluster {
		httpapi.WriteError(w, http.StatusForbidden, fmt.Errorf("reports file says cluster %q, but its certificate is cluster %q's", m.Cluster, cluster))
		return
	}
	valid, err := a.d.Store.CertificateValid(ctx, serial, cluster)
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("check certificate: %w", err))
		return
	}
	if !valid {
		httpapi.WriteError(w, http.StatusForbidden, fmt.Errorf("reports file of cluster %q: certificate %s revoked or cluster removed", cluster, serial))
		return
	}
	before, err := a.d.Store.ReportStats(ctx, cluster)
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, err)
		return
	}
	out := hubclient.ReportsImport{Cluster: cluster, Reports: len(rf.Reports), FirstSeq: m.FirstSeq, LastSeq: m.LastSeq}
	var stopped error
	for batch := range slices.Chunk(rf.Reports, ingestBatch) {
		refused, err := a.ingest(ctx, cluster, batch)
		out.Refused = append(out.Refused, refused...)
		if err != nil {
			stopped = err
			break
		}
	}
	after, err := a.d.Store.ReportStats(ctx, cluster)
	if err == nil {
		out.Ingested = int(after.Ingested - before.Ingested)
		out.IngestedThrough = after.LastSeq
	}
	out.Duplicates = out.Reports - out.Ingested - len(out.Refused)
	a.d.Record(ctx, httpapi.WithRole(ctx, audit.Event{Action: "reports.imported", Cluster: cluster, Detail: map[string]any{
		"reports": out.Reports, "ingested": out.Ingested, "duplicates": out.Duplicates, "refused": len(out.Refused),
		"firstSeq": m.FirstSeq, "lastSeq": m.LastSeq, "writtenAt": m.CreatedAt.Format(time.RFC3339), "certificate": serial,
		"certificateExpired": now.After(cert.NotAfter),
	}}))
	if stopped != nil {
		out.Duplicates = 0 // not known for the reports not tried
		httpapi.WriteError(w, http.StatusServiceUnavailable, stopped)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// ingestBatch is how many reports go to the ingestion at once, as an agent sends them.
const ingestBatch = 100

// ingest ingests a batch of reports in seq order. A batch refused as invalid (a report the
// hub will never take) is ingested one report at a time, so that the refused ones are listed
// and dropped and the rest go in, as an agent does online. Any other failure stops the
// import: the reports before it are in, and importing the file again ingests the rest.
func (a *API) ingest(ctx context.Context, cluster string, batch []*agentv1.Report) ([]hubclient.RefusedReport, error) {
	acked, err := a.d.Ingest(ctx, cluster, batch)
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		if err == nil && len(acked) < len(batch) {
			err = fmt.Errorf("%d of %d reports not stored", len(batch)-len(acked), len(batch))
		}
		if err != nil {
			return nil, fmt.Errorf("reports %d to %d of cluster %q: %s; the reports before them are ingested, import the file again to ingest the rest",
				batch[0].GetSeq(), batch[len(batch)-1].GetSeq(), cluster, connectMessage(err))
		}
		return nil, nil
	}
	var refused []hubclient.RefusedReport
	for _, rep := range batch {
		acked, err := a.d.Ingest(ctx, cluster, []*agentv1.Report{rep})
		if connect.CodeOf(err) == connect.CodeInvalidArgument {
			refused = append(refused, hubclient.RefusedReport{Seq: rep.GetSeq(), Error: connectMessage(err)})
			continue
		}
		if err == nil && len(acked) == 0 {
			err = errors.New("not stored")
		}
		if err != nil {
			return refused, fmt.Errorf("report %d of cluster %q: %s; the reports before it are ingested, import the file again to ingest the rest", rep.GetSeq(), cluster, connectMessage(err))
		}
	}
	return refused, nil
}

func connectMessage(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Message()
	}
	return err.Error()
}

// countingWriter counts the bytes of a bundle written to the client.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (a *API) stat(digest string) (os.FileInfo, error) {
	path, err := a.d.Artifacts.Path(digest)
	if err != nil {
		return nil, err
	}
	return os.Stat(path)
}
