package agent

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"google.golang.org/protobuf/proto"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/bundle"
	"github.com/flotilla/flotilla/internal/desired"
)

// Offline delivery (docs/airgap.md). A bundle reaches the agent through its state dir:
//
//	offline/hub-ca.crt, offline/cluster   what the agent pinned at its join, copied out of the
//	                                      locked database at every start, so that a command
//	                                      can check a bundle while the agent runs
//	offline/import/<name>.bundle          a bundle to take on; the agent answers in
//	                                      <name>.result (ImportResult, JSON) and removes it
//	offline/export/<name>.request         a request for the outbox; the agent answers with
//	                                      <name>.reports and <name>.result (ExportResult)
//
// A running agent holds its database's lock, so commands hand it files and it polls for them
// every offlinePoll on its clock; with the agent stopped, the commands open the state dir and
// do the same work themselves, through the same functions.
const (
	offlineDirName = "offline"
	offlinePoll    = 2 * time.Second
)

func offlineDir(stateDir string) string { return filepath.Join(stateDir, offlineDirName) }
func importDir(stateDir string) string  { return filepath.Join(offlineDir(stateDir), "import") }
func exportDir(stateDir string) string  { return filepath.Join(offlineDir(stateDir), "export") }

// Statuses of an ImportResult.
const (
	ImportImported = "imported"
	// ImportAlready: the bundle's generation is the one in force; only its report
	// acknowledgement is taken.
	ImportAlready = "already-imported"
	ImportRefused = "refused"
)

// ImportResult is what importing a bundle did.
type ImportResult struct {
	Status     string `json:"status"`
	Cluster    string `json:"cluster"`
	Generation int64  `json:"generation"`
	// Previous is the generation the agent had before (0: none).
	Previous  int64 `json:"previous"`
	Artifacts int   `json:"artifacts"`
	// OutboxDropped counts the reports dropped from the outbox because the bundle says the
	// hub has ingested them.
	OutboxDropped int    `json:"outboxDropped"`
	Message       string `json:"message"`
}

// ExportResult is what exporting the outbox wrote.
type ExportResult struct {
	Cluster  string `json:"cluster"`
	Reports  int    `json:"reports"`
	FirstSeq uint64 `json:"firstSeq"`
	LastSeq  uint64 `json:"lastSeq"`
	// Left are reports beyond the file's bound, for the next export.
	Left  int    `json:"left"`
	Error string `json:"error,omitempty"`
}

// importBundle verifies the bundle at path against the agent's identity (its pinned CA, its
// cluster) and decides on it against current, the desired state the agent has: an older
// generation is refused (no rollback by replay), the same one changes nothing but the outbox,
// a document that drops a release without a tombstone is refused as from the hub. On
// acceptance it puts the artifacts into the cache, unpacked as a download would be, and
// returns the desired state to take on. ackThrough is the report seq through which the hub
// has the outbox (0 on refusal).
func importBundle(ctx context.Context, st *state, id *identity, current *desired.State, path string) (res ImportResult, ds *desired.State, ackThrough uint64, err error) {
	res = ImportResult{Cluster: id.Cluster, Previous: generationOf(current)}
	refuse := func(err error) (ImportResult, *desired.State, uint64, error) {
		res.Status, res.Message = ImportRefused, err.Error()
		return res, nil, 0, nil
	}
	ca, err := parseCert(id.CAPEM)
	if err != nil {
		return res, nil, 0, fmt.Errorf("cluster %q: hub CA in the state dir: %w", id.Cluster, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return res, nil, 0, err
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	staging, err := os.MkdirTemp(offlineDir(st.dir), "staging-")
	if err != nil {
		return res, nil, 0, err
	}
	defer os.RemoveAll(staging)
	b, err := bundle.Read(ctx, f, bundle.ReadOptions{CA: ca, Cluster: id.Cluster, ArtifactDir: staging})
	if err != nil {
		return refuse(err)
	}
	m := b.Manifest
	res.Generation, res.Artifacts = m.Generation, len(m.Artifacts)
	switch have := generationOf(current); {
	case current != nil && m.Generation < have:
		return refuse(fmt.Errorf("bundle of cluster %q is generation %d, older than the desired state this agent has (generation %d): refused, a bundle never rolls an agent back", m.Cluster, m.Generation, have))
	case current != nil && m.Generation == have:
		res.Status = ImportAlready
		res.Message = fmt.Sprintf("desired state generation %d is already in force on cluster %q; nothing to apply", have, m.Cluster)
		return res, nil, m.ReportsIngestedThrough, nil
	}
	if refused := checkRemovals(current, b.Desired); refused != nil {
		return refuse(refused)
	}
	for _, d := range bundle.NeededDigests(b.Desired.Assignments) {
		if err := installArtifact(ctx, st.artifactDir(), d, b.Artifacts[d]); err != nil {
			return res, nil, 0, err
		}
	}
	res.Status = ImportImported
	res.Message = fmt.Sprintf("desired state generation %d of cluster %q imported (%d artifacts, written by the hub at %s)",
		m.Generation, m.Cluster, len(m.Artifacts), m.CreatedAt.Format(time.RFC3339))
	return res, &b.Desired, m.ReportsIngestedThrough, nil
}

// installArtifact unpacks a verified packed artifact into the cache, as artifactRoot does
// with a download; an artifact already cached is left as it is.
func installArtifact(ctx context.Context, cache, digest, packed string) error {
	hex, err := artifact.ParseDigest(digest)
	if err != nil {
		return err
	}
	dir := filepath.Join(cache, hex)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	f, err := os.Open(packed)
	if err != nil {
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	if err := unpackArtifact(ctx, cache, hex, f); err != nil {
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	return nil
}

// ackThrough drops the outbox's reports up to seq: the hub has them (it said so in a signed
// bundle). It returns how many went.
func (s *state) ackThrough(seq uint64) (int, error) {
	if seq == 0 {
		return 0, nil
	}
	dropped := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		dropped = 0
		b := tx.Bucket(bucketOutbox)
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= seq; k, _ = c.Next() {
			keys = append(keys, clone(k))
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		dropped = len(keys)
		return setOutboxCount(tx, outboxCount(tx)-dropped)
	})
	return dropped, err
}

// exportReports writes the outbox, oldest first, as a reports file signed with the agent's
// key. The outbox keeps them: they leave it when a bundle says the hub has them.
func exportReports(st *state, id *identity, w io.Writer, now time.Time) (ExportResult, error) {
	res := ExportResult{Cluster: id.Cluster}
	lim := bundle.DefaultReportsLimits()
	reports, err := st.pending(lim.MaxReports)
	if err != nil {
		return res, err
	}
	// The oldest reports that fit the hub's bound on a file, with room for the rest of it;
	// the others wait for the next export.
	size := int64(0)
	for i, r := range reports {
		if size += int64(proto.Size(r)) + 16; size > lim.MaxBytes-(1<<20) {
			reports = reports[:i]
			break
		}
	}
	if n := st.outboxDepth(); n > len(reports) {
		res.Left = n - len(reports)
	}
	block, _ := pem.Decode(id.KeyPEM)
	if block == nil {
		return res, fmt.Errorf("cluster %q: agent key in the state dir is not PEM", id.Cluster)
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return res, fmt.Errorf("cluster %q: agent key in the state dir: %w", id.Cluster, err)
	}
	m, err := bundle.WriteReports(w, id.Cluster, reports, id.CertPEM, key, now)
	if err != nil {
		return res, err
	}
	res.Reports, res.FirstSeq, res.LastSeq = m.Count, m.FirstSeq, m.LastSeq
	return res, nil
}

// offlineLoop pins what a command needs to check a bundle while the agent runs, then takes
// the bundles and export requests the commands leave in the state dir, at once and every
// offlinePoll.
func (a *Agent) offlineLoop(ctx context.Context) {
	if err := pinOffline(a.st.dir, a.id); err != nil {
		a.log.Warn("offline import: pinned CA not written; `flotilla agent import` cannot check bundles before this agent takes them", "error", err)
	}
	for ctx.Err() == nil {
		a.takeImports(ctx)
		a.takeExportRequests()
		a.sleep(ctx, offlinePoll)
	}
}

func pinOffline(stateDir string, id *identity) error {
	for _, d := range []string{importDir(stateDir), exportDir(stateDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	// Artifacts staged by an import that a crash interrupted: no import runs before this
	// agent holds the state dir's lock.
	if left, err := filepath.Glob(filepath.Join(offlineDir(stateDir), "staging-*")); err == nil {
		for _, d := range left {
			os.RemoveAll(d)
		}
	}
	if err := writeFileAtomic(filepath.Join(offlineDir(stateDir), "hub-ca.crt"), id.CAPEM); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(offlineDir(stateDir), "cluster"), []byte(id.Cluster+"\n"))
}

// takeImports takes the bundles waiting in the import dir, oldest name first, as desired
// states from the hub (offer).
func (a *Agent) takeImports(ctx context.Context) {
	for _, name := range waiting(importDir(a.st.dir), ".bundle") {
		path := filepath.Join(importDir(a.st.dir), name)
		res, ds, through, err := importBundle(ctx, a.st, a.id, a.currentDesired(), path)
		if ctx.Err() != nil {
			return // shutting down: the bundle stays for the next start
		}
		if err != nil {
			res.Status, res.Message = ImportRefused, err.Error()
		}
		if ds != nil {
			if have, ok := a.offerNewer(*ds); !ok {
				// The hub's watch stream brought this generation or a newer one while the
				// bundle was read: the bundle must not take it back.
				res.Status, res.Message = ImportAlready, fmt.Sprintf("desired state generation %d reached the agent from the hub meanwhile; nothing to apply", have)
			} else {
				a.log.Info("desired state imported from a bundle", "generation", ds.Generation, "assignments", len(ds.Assignments), "tombstones", len(ds.Removed))
			}
		}
		if res.Status == ImportRefused {
			a.log.Error("bundle refused", "file", name, "error", res.Message)
		}
		if res.OutboxDropped, err = a.st.ackThrough(through); err != nil {
			a.log.Error("drop the reports the hub has from the outbox", "error", err)
		}
		a.opts.Metrics.setOutbox(a.st.outboxDepth())
		a.answer(path, ".bundle", res)
	}
}

// takeExportRequests writes the outbox for each request waiting in the export dir.
func (a *Agent) takeExportRequests() {
	for _, name := range waiting(exportDir(a.st.dir), ".request") {
		path := filepath.Join(exportDir(a.st.dir), name)
		base := strings.TrimSuffix(path, ".request")
		res, err := writeExport(a.st, a.id, base+".reports", a.clock.Now())
		if err != nil {
			res.Error = err.Error()
			a.log.Error("export reports", "error", err)
		}
		a.answer(path, ".request", res)
	}
}

func writeExport(st *state, id *identity, path string, now time.Time) (ExportResult, error) {
	tmp := path + ".part"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return ExportResult{Cluster: id.Cluster}, err
	}
	defer os.Remove(tmp)
	res, err := exportReports(st, id, f, now)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, err
	}
	return res, os.Rename(tmp, path)
}

// answer writes the result of the request at path and removes the request.
func (a *Agent) answer(path, suffix string, res any) {
	data, _ := json.Marshal(res)
	if err := writeFileAtomic(strings.TrimSuffix(path, suffix)+".result", data); err != nil {
		a.log.Error("offline: write result", "file", path, "error", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		a.log.Error("offline: remove request", "file", path, "error", err)
	}
}

// waiting lists the names in dir ending in suffix, sorted.
func waiting(dir, suffix string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".part"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ImportBundle imports the bundle file into the agent of stateDir (`flotilla agent import`).
// With the agent stopped it does the work itself: the agent reconciles the imported desired
// state at its next start. With the agent running (its database locked), it checks the
// bundle against the CA the agent pinned, hands it to the agent and waits up to wait for the
// answer. A refused bundle is an ImportResult with Status ImportRefused, not an error.
func ImportBundle(ctx context.Context, stateDir, file string, wait time.Duration) (ImportResult, error) {
	st, running, err := openOffline(stateDir)
	if err != nil {
		return ImportResult{}, err
	}
	if !running {
		defer func() { _ = st.close() }() // each transaction was committed as it went
		id, err := st.loadIdentity()
		if err != nil || id == nil {
			return ImportResult{}, notJoined(stateDir, err)
		}
		current, err := st.loadDesired()
		if errors.As(err, new(*unreadableDesiredError)) {
			current, err = nil, nil // as the agent starts without it (unreadableDesiredError)
		}
		if err != nil {
			return ImportResult{}, err
		}
		if err := os.MkdirAll(offlineDir(stateDir), 0o700); err != nil {
			return ImportResult{}, err
		}
		res, ds, through, err := importBundle(ctx, st, id, current, file)
		if err != nil {
			return res, err
		}
		if ds != nil {
			if err := st.saveDesired(*ds); err != nil {
				return res, fmt.Errorf("save the imported desired state: %w", err)
			}
		}
		if res.OutboxDropped, err = st.ackThrough(through); err != nil {
			return res, fmt.Errorf("drop the reports the hub has from the outbox: %w", err)
		}
		return res, nil
	}
	if err := precheck(ctx, stateDir, file); err != nil {
		return ImportResult{Status: ImportRefused, Message: err.Error()}, nil
	}
	name := requestName()
	dst := filepath.Join(importDir(stateDir), name+".bundle")
	if err := copyFile(file, dst+".part"); err != nil {
		return ImportResult{}, fmt.Errorf("hand the bundle to the running agent: %w", err)
	}
	if err := os.Rename(dst+".part", dst); err != nil {
		return ImportResult{}, err
	}
	var res ImportResult
	if err := awaitResult(ctx, filepath.Join(importDir(stateDir), name+".result"), wait, &res); err != nil {
		return res, fmt.Errorf("%w; the bundle stays queued as %s and the agent takes it when it can", err, dst)
	}
	return res, nil
}

// ExportReports writes the outbox of the agent of stateDir to w (`flotilla agent
// export-reports`): itself with the agent stopped, through the agent while it runs.
func ExportReports(ctx context.Context, stateDir string, w io.Writer, wait time.Duration, now time.Time) (ExportResult, error) {
	st, running, err := openOffline(stateDir)
	if err != nil {
		return ExportResult{}, err
	}
	if !running {
		defer func() { _ = st.close() }() // each transaction was committed as it went
		id, err := st.loadIdentity()
		if err != nil || id == nil {
			return ExportResult{}, notJoined(stateDir, err)
		}
		return exportReports(st, id, w, now)
	}
	name := requestName()
	base := filepath.Join(exportDir(stateDir), name)
	if err := os.WriteFile(base+".request", nil, 0o600); err != nil {
		return ExportResult{}, fmt.Errorf("ask the running agent for its reports (is it a version with offline export?): %w", err)
	}
	var res ExportResult
	if err := awaitResult(ctx, base+".result", wait, &res); err != nil {
		os.Remove(base + ".request")
		return res, err
	}
	defer os.Remove(base + ".reports")
	if res.Error != "" {
		return res, errors.New(res.Error)
	}
	f, err := os.Open(base + ".reports")
	if err != nil {
		return res, err
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	_, err = io.Copy(w, f)
	return res, err
}

// openOffline opens the state dir of a joined agent, or says that its agent runs (the
// database is locked).
func openOffline(stateDir string) (*state, bool, error) {
	path := filepath.Join(stateDir, "agent.db")
	if _, err := os.Stat(path); err != nil {
		return nil, false, notJoined(stateDir, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 500 * time.Millisecond})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("state dir %s: %w", stateDir, err)
	}
	if err := db.Close(); err != nil {
		return nil, false, fmt.Errorf("state dir %s: %w", stateDir, err)
	}
	st, err := openState(stateDir)
	return st, false, err
}

func notJoined(stateDir string, err error) error {
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("state dir %s: %w", stateDir, err)
	}
	return fmt.Errorf("state dir %s holds no agent identity: join the agent to its hub first (docs/airgap.md)", stateDir)
}

// precheck verifies a bundle against what the running agent pinned, so that a tampered or
// foreign bundle is refused at once; the agent checks it again, with its generation.
func precheck(ctx context.Context, stateDir, file string) error {
	caPEM, err := os.ReadFile(filepath.Join(offlineDir(stateDir), "hub-ca.crt"))
	if err != nil {
		return fmt.Errorf("the running agent has not pinned its hub CA in %s (is it a version with offline import?): %w", offlineDir(stateDir), err)
	}
	cluster, err := os.ReadFile(filepath.Join(offlineDir(stateDir), "cluster"))
	if err != nil {
		return err
	}
	ca, err := parseCert(caPEM)
	if err != nil {
		return fmt.Errorf("pinned hub CA: %w", err)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	_, err = bundle.Read(ctx, f, bundle.ReadOptions{CA: ca, Cluster: strings.TrimSpace(string(cluster))})
	return err
}

// awaitResult waits for the agent's answer at path, polling, up to wait.
func awaitResult(ctx context.Context, path string, wait time.Duration, v any) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			os.Remove(path)
			return json.Unmarshal(data, v)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the running agent did not answer within %s", wait)
		case <-t.C:
		}
	}
}

func requestName() string {
	return fmt.Sprintf("%020d-%d", time.Now().UnixNano(), os.Getpid())
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read only: Close has nothing to flush
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close() // already failing: the first error is the one returned
		os.Remove(dst)
		return err
	}
	return out.Close()
}
