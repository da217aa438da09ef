package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/flotilla/flotilla/internal/desired"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// state is the agent's state directory: an embedded transactional store (bbolt) holding its
// identity, the last desired state, and the outbox of reports not yet acknowledged, plus the
// artifact cache beside it. With it the agent keeps reconciling across its own restarts and
// while the hub is away.
type state struct {
	dir string
	db  *bolt.DB

	// mu guards the caches of bucketReleases and bucketSyncs, read at open and written
	// through.
	mu       sync.Mutex
	releases map[string]releaseRecord
	handled  []string // sync ids acted on, oldest first
}

var (
	bucketIdentity = []byte("identity")
	bucketDesired  = []byte("desired")
	bucketOutbox   = []byte("outbox")
	// bucketReleases keeps per release what is in force and whether it was last Ready
	// (releaseRecord), for gates and dependsOn across restarts and while the hub is away.
	bucketReleases = []byte("releases")
	// bucketSyncs keeps the ids of the sync requests acted on (handledSyncs).
	bucketSyncs = []byte("syncs")
	keyDesired  = []byte("current")
	keyNextSeq  = []byte("next-seq")
)

// identity is what joining produced.
type identity struct {
	// NextReportSeq is what the hub said at join; not part of the stored identity.
	NextReportSeq uint64
	Cluster       string
	HubURL        string
	KeyPEM        []byte
	CertPEM       []byte
	CAPEM         []byte
}

func openState(dir string) (*state, error) {
	if err := os.MkdirAll(filepath.Join(dir, "artifacts"), 0o700); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, "agent.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open %s (is another agent using this state dir?): %w", path, err)
	}
	// The lock is ours: what a killed agent left half downloaded or half unpacked goes.
	for _, pattern := range []string{"*.download", "*.unpacking"} {
		left, _ := filepath.Glob(filepath.Join(dir, "artifacts", pattern))
		for _, p := range left {
			os.RemoveAll(p)
		}
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketReleases) == nil {
			// A state dir from before the releases bucket: what the last accepted desired
			// state assigns was applied by the agent that cached it, so it is in force.
			if err := seedReleases(tx); err != nil {
				return err
			}
		}
		for _, b := range [][]byte{bucketIdentity, bucketDesired, bucketOutbox, bucketSyncs} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close() // already failing: the first error is the one returned
		return nil, fmt.Errorf("initialise %s: %w", path, err)
	}
	st := &state{dir: dir, db: db}
	if err := st.loadCaches(); err != nil {
		_ = db.Close() // already failing: the first error is the one returned
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return st, nil
}

func (s *state) close() error { return s.db.Close() }

func (s *state) artifactDir() string { return filepath.Join(s.dir, "artifacts") }

var identityFields = []string{"cluster", "hub", "key", "cert", "ca"}

func (s *state) loadIdentity() (*identity, error) {
	var id identity
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIdentity)
		if b.Get([]byte("cluster")) == nil {
			return nil
		}
		found = true
		id.Cluster = string(b.Get([]byte("cluster")))
		id.HubURL = string(b.Get([]byte("hub")))
		id.KeyPEM = clone(b.Get([]byte("key")))
		id.CertPEM = clone(b.Get([]byte("cert")))
		id.CAPEM = clone(b.Get([]byte("ca")))
		return nil
	})
	if err != nil || !found {
		return nil, err
	}
	return &id, nil
}

func (s *state) saveIdentity(id *identity) error {
	values := [][]byte{[]byte(id.Cluster), []byte(id.HubURL), id.KeyPEM, id.CertPEM, id.CAPEM}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIdentity)
		for i, f := range identityFields {
			if err := b.Put([]byte(f), values[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// unreadableDesiredError is a cached desired state that is no document: one an agent before
// this check accepted (Helm values that are not JSON). The agent starts without it, as if it
// had none, rather than not at all; the hub's next document replaces it.
type unreadableDesiredError struct{ err error }

func (e *unreadableDesiredError) Error() string { return "cached desired state: " + e.err.Error() }
func (e *unreadableDesiredError) Unwrap() error { return e.err }

// loadDesired returns the cached desired state, nil when there is none. The state dir holds
// it in the wire form, as agents before the desired model wrote it too.
func (s *state) loadDesired() (*desired.State, error) {
	var m *agentv1.DesiredState
	err := s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketDesired).Get(keyDesired)
		if data == nil {
			return nil
		}
		m = &agentv1.DesiredState{}
		return proto.Unmarshal(data, m)
	})
	if err != nil {
		return nil, fmt.Errorf("read cached desired state: %w", err)
	}
	if m == nil {
		return nil, nil
	}
	ds, err := desired.FromProto(m)
	if err != nil {
		return nil, &unreadableDesiredError{err: err}
	}
	return &ds, nil
}

func (s *state) saveDesired(ds desired.State) error {
	m, err := desired.StateToProto(ds)
	if err != nil {
		return fmt.Errorf("desired state generation %d: %w", ds.Generation, err)
	}
	data, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("desired state generation %d: %w", ds.Generation, err)
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketDesired).Put(keyDesired, data) })
}

// enqueue writes a report to the outbox, giving it the next sequence number, before anything
// tries to send it. When the outbox holds more than max reports it is compacted (see compact).
func (s *state) enqueue(r *agentv1.Report, max int) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutbox)
		seq := uint64(1)
		if v := tx.Bucket(bucketIdentity).Get(keyNextSeq); v != nil {
			seq = binary.BigEndian.Uint64(v)
		}
		r.Seq = seq
		data, err := proto.Marshal(r)
		if err != nil {
			return err
		}
		if err := b.Put(seqKey(seq), data); err != nil {
			return err
		}
		if err := tx.Bucket(bucketIdentity).Put(keyNextSeq, seqKey(seq+1)); err != nil {
			return err
		}
		n := outboxCount(tx) + 1
		if max > 0 && n > max {
			dropped, err := compact(b)
			if err != nil {
				return err
			}
			n -= dropped
		}
		return setOutboxCount(tx, n)
	})
}

// keyOutboxCount keeps the number of reports in the outbox, updated in the transactions that
// change it: counting the bucket (Stats) would walk all its pages on every report.
var keyOutboxCount = []byte("outbox-count")

func outboxCount(tx *bolt.Tx) int {
	if v := tx.Bucket(bucketIdentity).Get(keyOutboxCount); v != nil {
		return int(binary.BigEndian.Uint64(v))
	}
	return tx.Bucket(bucketOutbox).Stats().KeyN // a state dir from before the counter
}

func setOutboxCount(tx *bolt.Tx, n int) error {
	return tx.Bucket(bucketIdentity).Put(keyOutboxCount, seqKey(uint64(max(n, 0))))
}

// compact bounds the outbox while the hub is away: going from the newest report to the oldest,
// it drops every status that a newer report supersedes (same release), so the newest status of
// each assignment always survives, and deletes the reports left empty. The number of reports
// deleted (with any count they carried) is added to the newest report's Compacted, which the
// hub records: reports are lost to the bound, never silently.
// It returns the number of reports deleted.
func compact(b *bolt.Bucket) (int, error) {
	seen := map[string]bool{}
	var drop [][]byte
	rewrite := map[string][]byte{}
	var carried uint64
	c := b.Cursor()
	newestKey, _ := c.Last()
	newestKey = clone(newestKey)
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		r := &agentv1.Report{}
		if err := proto.Unmarshal(v, r); err != nil {
			return 0, fmt.Errorf("outbox entry %d: %w", binary.BigEndian.Uint64(k), err)
		}
		kept := r.Statuses[:0]
		for _, st := range r.Statuses {
			if !seen[st.Release] {
				kept = append(kept, st)
			}
		}
		for _, st := range r.Statuses {
			seen[st.Release] = true
		}
		switch {
		case len(kept) == 0 && !bytes.Equal(k, newestKey):
			drop = append(drop, clone(k))
			carried += 1 + r.Compacted
		case len(kept) < len(r.Statuses):
			r.Statuses = kept
			data, err := proto.Marshal(r)
			if err != nil {
				return 0, err
			}
			rewrite[string(k)] = data
		}
	}
	for k, data := range rewrite {
		if err := b.Put([]byte(k), data); err != nil {
			return 0, err
		}
	}
	for _, k := range drop {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	if carried == 0 {
		return len(drop), nil
	}
	newest := &agentv1.Report{}
	if err := proto.Unmarshal(b.Get(newestKey), newest); err != nil {
		return 0, err
	}
	newest.Compacted += carried
	data, err := proto.Marshal(newest)
	if err != nil {
		return 0, err
	}
	return len(drop), b.Put(newestKey, data)
}

// setNextSeq makes the next report use seq at least (the hub says where a re-joined agent's
// reports continue).
func (s *state) setNextSeq(seq uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIdentity)
		if v := b.Get(keyNextSeq); v != nil && binary.BigEndian.Uint64(v) >= seq {
			return nil
		}
		return b.Put(keyNextSeq, seqKey(seq))
	})
}

// Stats describes an agent's state dir, for operators and tests.
type Stats struct {
	// NextSeq is the seq the next report will get: the reports produced since the agent
	// joined are NextSeq minus the first seq the hub gave it at join.
	NextSeq uint64
	// Outbox is the number of reports not yet acknowledged by the hub.
	Outbox int
}

// ReadStats reads the stats of a state dir whose agent is not running.
func ReadStats(dir string) (Stats, error) {
	db, err := bolt.Open(filepath.Join(dir, "agent.db"), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return Stats{}, fmt.Errorf("state dir %s: %w", dir, err)
	}
	defer func() { _ = db.Close() }() // read only: Close has nothing to flush
	var st Stats
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketIdentity); b != nil {
			if v := b.Get(keyNextSeq); v != nil {
				st.NextSeq = binary.BigEndian.Uint64(v)
			}
		}
		if b := tx.Bucket(bucketOutbox); b != nil {
			st.Outbox = b.Stats().KeyN
		}
		return nil
	})
	return st, err
}

// pending returns up to max reports in sequence order.
func (s *state) pending(max int) ([]*agentv1.Report, error) {
	var out []*agentv1.Report
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOutbox).Cursor()
		for k, v := c.First(); k != nil && len(out) < max; k, v = c.Next() {
			r := &agentv1.Report{}
			if err := proto.Unmarshal(v, r); err != nil {
				return fmt.Errorf("outbox entry %d: %w", binary.BigEndian.Uint64(k), err)
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// ack removes acknowledged reports: only now are they safe to forget.
func (s *state) ack(seqs []uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutbox)
		n := outboxCount(tx)
		for _, seq := range seqs {
			if b.Get(seqKey(seq)) == nil {
				continue // acked twice: count it once
			}
			if err := b.Delete(seqKey(seq)); err != nil {
				return err
			}
			n--
		}
		return setOutboxCount(tx, n)
	})
}

func (s *state) outboxDepth() int {
	n := 0
	_ = s.db.View(func(tx *bolt.Tx) error {
		n = outboxCount(tx)
		return nil
	})
	return n
}

// withdraw removes from the outbox the statuses of releases, and the reports left with none:
// reports the hub will never take, because its desired state dropped their release (the agent
// refuses that document and keeps running the release). A report that carries a compacted
// count is kept, empty, so the count still reaches the hub. It returns how many statuses went.
func (s *state) withdraw(releases []string) (int, error) {
	drop := map[string]bool{}
	for _, r := range releases {
		drop[r] = true
	}
	withdrawn := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		withdrawn = 0 // a retried transaction starts afresh
		b := tx.Bucket(bucketOutbox)
		var del [][]byte
		rewrite := map[string][]byte{}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			r := &agentv1.Report{}
			if err := proto.Unmarshal(v, r); err != nil {
				return fmt.Errorf("outbox entry %d: %w", binary.BigEndian.Uint64(k), err)
			}
			kept := make([]*agentv1.AssignmentStatus, 0, len(r.Statuses))
			for _, st := range r.Statuses {
				if !drop[st.Release] {
					kept = append(kept, st)
				}
			}
			if len(kept) == len(r.Statuses) {
				continue
			}
			withdrawn += len(r.Statuses) - len(kept)
			if len(kept) == 0 && r.Compacted == 0 {
				del = append(del, clone(k))
				continue
			}
			r.Statuses = kept
			data, err := proto.Marshal(r)
			if err != nil {
				return err
			}
			rewrite[string(k)] = data
		}
		for _, k := range del {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		for k, v := range rewrite {
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return setOutboxCount(tx, outboxCount(tx)-len(del))
	})
	return withdrawn, err
}

// releaseRecord is what the agent keeps per release in bucketReleases.
type releaseRecord struct {
	// Applied is the assignment (its wire form, as agents before the desired model wrote it
	// too: appliedBytes) whose content (revision, artifact, path, vars,
	// namespace: see sameContent) is in force, the last one the agent applied. While a gate
	// or a dependency holds back a newer one, this one is what the agent reconciles.
	Applied []byte `json:"applied,omitempty"`
	// ReadyKey is the assignmentKey of the assignment whose last reconcile was Ready; "" when
	// the last reconcile was not. dependsOn reads it.
	ReadyKey string `json:"readyKey,omitempty"`
}

var keyHandledSyncs = []byte("handled")

// maxHandledSyncs bounds the sync ids remembered: the hub sends a request for minutes
// (controller.SyncTTL), so the latest thousand ids cover every request still sent.
const maxHandledSyncs = 1000

// seedReleases creates bucketReleases in a state dir from an agent before it: the releases
// of the cached desired state are the ones that agent applied, so they are in force.
func seedReleases(tx *bolt.Tx) error {
	b, err := tx.CreateBucket(bucketReleases)
	if err != nil {
		return err
	}
	data := tx.Bucket(bucketDesired)
	if data == nil || data.Get(keyDesired) == nil {
		return nil
	}
	ds := &agentv1.DesiredState{}
	if proto.Unmarshal(data.Get(keyDesired), ds) != nil {
		return nil // loadDesired reports it
	}
	for _, as := range ds.Assignments {
		applied, err := proto.Marshal(as)
		if err != nil {
			return err
		}
		rec, err := json.Marshal(releaseRecord{Applied: applied})
		if err != nil {
			return err
		}
		if err := b.Put([]byte(as.Release), rec); err != nil {
			return err
		}
	}
	return nil
}

func (s *state) loadCaches() error {
	s.releases = map[string]releaseRecord{}
	return s.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketReleases).ForEach(func(k, v []byte) error {
			var rec releaseRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("release %q: %w", k, err)
			}
			s.releases[string(k)] = rec
			return nil
		})
		if err != nil {
			return err
		}
		if v := tx.Bucket(bucketSyncs).Get(keyHandledSyncs); v != nil {
			if err := json.Unmarshal(v, &s.handled); err != nil {
				return fmt.Errorf("handled sync requests: %w", err)
			}
		}
		return nil
	})
}

// release returns what the agent keeps of a release.
func (s *state) release(name string) releaseRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releases[name]
}

// applied returns the assignment in force for a release, nil when nothing is (or what is
// recorded cannot be read: the release is then applied as if for the first time).
func (s *state) applied(name string) *desired.Assignment {
	rec := s.release(name)
	if rec.Applied == nil {
		return nil
	}
	m := &agentv1.Assignment{}
	if proto.Unmarshal(rec.Applied, m) != nil {
		return nil
	}
	as, err := desired.AssignmentFromProto(m)
	if err != nil {
		return nil
	}
	return &as
}

// appliedBytes is as in the form releaseRecord.Applied keeps it: deterministic, so that an
// unchanged assignment (its vars a map) is not rewritten, and its hash (assignmentKey) is the
// one agents before the desired model recorded.
func appliedBytes(as *desired.Assignment) ([]byte, error) {
	m, err := desired.AssignmentToProto(*as)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// setRelease writes a release's record when it changed.
func (s *state) setRelease(name string, rec releaseRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.releases[name]; ok && bytes.Equal(old.Applied, rec.Applied) && old.ReadyKey == rec.ReadyKey {
		return nil
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketReleases).Put([]byte(name), data) }); err != nil {
		return err
	}
	s.releases[name] = rec
	return nil
}

// forgetRelease drops a release's record: it left the cluster, nothing of it is in force.
func (s *state) forgetRelease(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.releases[name]; !ok {
		return nil
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketReleases).Delete([]byte(name)) }); err != nil {
		return err
	}
	delete(s.releases, name)
	return nil
}

// syncHandled reports whether the sync request id was acted on.
func (s *state) syncHandled(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.handled, id)
}

// markSyncsHandled remembers ids as acted on, forgetting the oldest beyond maxHandledSyncs.
func (s *state) markSyncsHandled(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	handled := append(slices.Clone(s.handled), ids...)
	if len(handled) > maxHandledSyncs {
		handled = handled[len(handled)-maxHandledSyncs:]
	}
	data, err := json.Marshal(handled)
	if err != nil {
		return err
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSyncs).Put(keyHandledSyncs, data) }); err != nil {
		return err
	}
	s.handled = handled
	return nil
}

func seqKey(seq uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, seq)
	return k
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

var errNotJoined = errors.New("agent has not joined a hub: give --join-token or --join-token-file")
