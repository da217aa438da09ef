package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// genesisHash is the PrevHash of the first record.
var genesisHash = strings.Repeat("0", 64)

// hashVersion prefixes the hashed encoding, so that a later change of encoding cannot be
// confused with this one.
const hashVersion = "flotilla-audit-v1"

// Append records e as the next record of the chain and returns it. Appends are serialised:
// the chain is read and extended inside one write transaction.
func (l *Log) Append(ctx context.Context, e Event) (Record, error) {
	if e.Actor == "" || e.Action == "" {
		return Record{}, errors.New("audit event: actor and action are required")
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	// Nanoseconds since 1970 in UTC is what the file keeps; hash exactly that.
	e.Time = time.Unix(0, e.Time.UnixNano()).UTC()
	detail, err := canonicalDetail(e.Detail)
	if err != nil {
		return Record{}, fmt.Errorf("audit event %s: detail: %w", e.Action, err)
	}
	// Read back what the hash covers, so the caller sees what List will return.
	e.Detail = nil
	if err := json.Unmarshal(detail, &e.Detail); err != nil {
		return Record{}, fmt.Errorf("audit event %s: detail: %w", e.Action, err)
	}
	if len(e.Detail) == 0 {
		e.Detail = nil
	}
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return Record{}, fmt.Errorf("audit append: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	rec := Record{Event: e, Seq: 1, PrevHash: genesisHash}
	var lastSeq int64
	var lastHash string
	switch err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM head WHERE id = 1`).Scan(&lastSeq, &lastHash); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return Record{}, fmt.Errorf("audit append: read head: %w", err)
	default:
		rec.Seq, rec.PrevHash = lastSeq+1, lastHash
	}
	rec.Hash = hashRecord(rec.Seq, e, detail, rec.PrevHash)
	if _, err := tx.ExecContext(ctx, `INSERT INTO records (seq, time, actor, action, cluster, release, detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		rec.Seq, e.Time.UnixNano(), e.Actor, e.Action, e.Cluster, e.Release, string(detail), rec.PrevHash, rec.Hash); err != nil {
		return Record{}, fmt.Errorf("audit append: record %d: %w", rec.Seq, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`, rec.Seq, rec.Hash); err != nil {
		return Record{}, fmt.Errorf("audit append: head: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Record{}, fmt.Errorf("audit append: %w", err)
	}
	return rec, nil
}

// canonicalDetail encodes d as canonical JSON: object keys sorted at every level (what
// encoding/json does for maps), no insignificant space, {} for none.
func canonicalDetail(d map[string]any) ([]byte, error) {
	if len(d) == 0 {
		return []byte("{}"), nil
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	// Structs inside d keep their field order; a round trip through map[string]any sorts
	// them too, so that the stored form is canonical whatever the caller passed.
	var generic map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers keep their digits: an int64 is not rounded to a float64
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return json.Marshal(generic)
}

// hashRecord is the hex SHA-256 of the record's canonical encoding: the version tag then each
// field as a netstring (decimal length, ':', bytes, ','), in this order: seq (decimal), time
// (UTC RFC 3339 with nanoseconds), actor, action, cluster, release, detail (canonical JSON as
// stored), prevHash. Length prefixes make the encoding unambiguous whatever the fields hold.
func hashRecord(seq int64, e Event, detail []byte, prevHash string) string {
	h := sha256.New()
	field := func(b []byte) {
		h.Write(strconv.AppendInt(nil, int64(len(b)), 10))
		h.Write([]byte{':'})
		h.Write(b)
		h.Write([]byte{','})
	}
	field([]byte(hashVersion))
	field(strconv.AppendInt(nil, seq, 10))
	field([]byte(e.Time.UTC().Format(time.RFC3339Nano)))
	field([]byte(e.Actor))
	field([]byte(e.Action))
	field([]byte(e.Cluster))
	field([]byte(e.Release))
	field(detail)
	field([]byte(prevHash))
	return hex.EncodeToString(h.Sum(nil))
}
