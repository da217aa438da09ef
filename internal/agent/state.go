package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// state is the agent's state directory: an embedded transactional store (bbolt) holding its
// identity, the last desired state, and the outbox of reports not yet acknowledged, plus the
// artifact cache beside it. With it the agent keeps reconciling across its own restarts and
// while the hub is away.
type state struct {
	dir string
	db  *bolt.DB
}

var (
	bucketIdentity = []byte("identity")
	bucketDesired  = []byte("desired")
	bucketOutbox   = []byte("outbox")
	keyDesired     = []byte("current")
	keyNextSeq     = []byte("next-seq")
)

// identity is what joining produced.
type identity struct {
	Cluster string
	HubURL  string
	KeyPEM  []byte
	CertPEM []byte
	CAPEM   []byte
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
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketIdentity, bucketDesired, bucketOutbox} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialise %s: %w", path, err)
	}
	return &state{dir: dir, db: db}, nil
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

func (s *state) loadDesired() (*agentv1.DesiredState, error) {
	var ds *agentv1.DesiredState
	err := s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketDesired).Get(keyDesired)
		if data == nil {
			return nil
		}
		ds = &agentv1.DesiredState{}
		return proto.Unmarshal(data, ds)
	})
	if err != nil {
		return nil, fmt.Errorf("read cached desired state: %w", err)
	}
	return ds, nil
}

func (s *state) saveDesired(ds *agentv1.DesiredState) error {
	data, err := proto.Marshal(ds)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketDesired).Put(keyDesired, data) })
}

// enqueue writes a report to the outbox, giving it the next sequence number, before anything
// tries to send it.
func (s *state) enqueue(r *agentv1.Report) error {
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
		return tx.Bucket(bucketIdentity).Put(keyNextSeq, seqKey(seq+1))
	})
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
		for _, seq := range seqs {
			if err := b.Delete(seqKey(seq)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *state) outboxDepth() int {
	n := 0
	_ = s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketOutbox).Stats().KeyN
		return nil
	})
	return n
}

func seqKey(seq uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, seq)
	return k
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

var errNotJoined = errors.New("agent has not joined a hub: give --join-token")
