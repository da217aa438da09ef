package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ChainError is a broken chain: the first record at which the log stops being what was
// appended.
type ChainError struct {
	// Seq is the first record that fails.
	Seq int64
	// Reason says how, and what that means (edited, deleted, inserted, truncated).
	Reason string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("audit record %d: %s", e.Seq, e.Reason)
}

// Head returns the last record's seq and hash (0 and 64 zeros for an empty log): keep a copy
// elsewhere to detect a later rewrite of the whole history before it.
func (l *Log) Head(ctx context.Context) (seq int64, hash string, err error) {
	err = l.r.QueryRowContext(ctx, `SELECT seq, hash FROM head WHERE id = 1`).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, genesisHash, nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("audit head: %w", err)
	}
	return seq, hash, nil
}

// Verify walks the whole chain, on one snapshot of the log, and returns how many records it
// checked. A broken chain is a *ChainError naming the first record that fails; other errors
// are failures to read the log.
func (l *Log) Verify(ctx context.Context) (checked int64, err error) {
	tx, err := l.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("audit verify: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	// The head first: the snapshot starts with this statement, so head and records agree.
	var headSeq int64
	var headHash string
	hasHead := true
	switch err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM head WHERE id = 1`).Scan(&headSeq, &headHash); {
	case errors.Is(err, sql.ErrNoRows):
		hasHead = false
	case err != nil:
		return 0, fmt.Errorf("audit verify: read head: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+columns+` FROM records ORDER BY seq`)
	if err != nil {
		return 0, fmt.Errorf("audit verify: %w", err)
	}
	defer rows.Close()
	want, prev := int64(1), genesisHash
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return checked, fmt.Errorf("audit verify: %w", err)
		}
		if err := checkRecord(r, want, prev); err != nil {
			return checked, err
		}
		checked++
		want, prev = r.Seq+1, r.Hash
	}
	if err := rows.Err(); err != nil {
		return checked, fmt.Errorf("audit verify: %w", err)
	}
	last := want - 1
	switch {
	case !hasHead && last == 0:
		return 0, nil
	case !hasHead:
		return checked, &ChainError{Seq: last, Reason: "the head row is missing: the log was tampered with"}
	case headSeq > last:
		return checked, &ChainError{Seq: last + 1, Reason: fmt.Sprintf("missing: the head names record %d but the log ends at %d; its tail was deleted", headSeq, last)}
	case headSeq < last:
		return checked, &ChainError{Seq: headSeq + 1, Reason: fmt.Sprintf("not in the head, which names record %d: records were appended outside the log", headSeq)}
	case headHash != prev:
		return checked, &ChainError{Seq: last, Reason: "hash differs from the head's: the record or the head was rewritten"}
	}
	return checked, nil
}

// checkRecord checks one record against its expected seq and the previous record's hash.
func checkRecord(r row, want int64, prev string) error {
	switch {
	case r.Seq > want:
		if want == r.Seq-1 {
			return &ChainError{Seq: want, Reason: fmt.Sprintf("missing (the log goes from %d to %d): a record was deleted", want-1, r.Seq)}
		}
		return &ChainError{Seq: want, Reason: fmt.Sprintf("missing, with the %d after it (the log goes from %d to %d): records were deleted", r.Seq-want-1, want-1, r.Seq)}
	case r.Seq < want:
		// seq is the primary key, so rows come in strictly increasing order; only a
		// first record numbered below 1 gets here.
		return &ChainError{Seq: r.Seq, Reason: "sequence number out of order: a record was inserted"}
	case r.PrevHash != prev:
		return &ChainError{Seq: r.Seq, Reason: fmt.Sprintf("previous hash does not match record %d: a record before it was deleted, inserted or rewritten", r.Seq-1)}
	}
	if got := hashRecord(r.Seq, r.Event, []byte(r.detail), r.PrevHash); got != r.Hash {
		return &ChainError{Seq: r.Seq, Reason: "hash does not match its content: the record was edited"}
	}
	return nil
}
