package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Filter selects records; zero fields select everything.
type Filter struct {
	// Since keeps records at or after this time.
	Since   time.Time
	Cluster string
	Release string
	Action  string
	// ExcludeActions drops records of these actions (apply.verified, to hide checkpoints).
	ExcludeActions []string
	// Limit keeps only the last Limit matching records (still in sequence order); 0 keeps
	// all.
	Limit int
}

func (f Filter) where() (string, []any) {
	var conds []string
	var args []any
	if !f.Since.IsZero() {
		conds, args = append(conds, "time >= ?"), append(args, f.Since.UnixNano())
	}
	for _, c := range []struct{ col, v string }{{"cluster", f.Cluster}, {"release", f.Release}, {"action", f.Action}} {
		if c.v != "" {
			conds, args = append(conds, c.col+" = ?"), append(args, c.v)
		}
	}
	if n := len(f.ExcludeActions); n > 0 {
		conds = append(conds, "action NOT IN (?"+strings.Repeat(", ?", n-1)+")")
		for _, a := range f.ExcludeActions {
			args = append(args, a)
		}
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

const columns = `seq, time, actor, action, cluster, release, detail, prev_hash, hash`

// query runs the filtered select; with a limit it takes the newest rows, which the callers
// put back in sequence order.
func (l *Log) query(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, f Filter) (*sql.Rows, error) {
	where, args := f.where()
	if f.Limit > 0 {
		return q.QueryContext(ctx, `SELECT * FROM (SELECT `+columns+` FROM records`+where+` ORDER BY seq DESC LIMIT ?) ORDER BY seq`, append(args, f.Limit)...)
	}
	return q.QueryContext(ctx, `SELECT `+columns+` FROM records`+where+` ORDER BY seq`, args...)
}

// row is a record as stored: detail as the exact text that was hashed.
type row struct {
	Record
	detail string
}

func scanRow(rows *sql.Rows) (row, error) {
	var r row
	var nanos int64
	if err := rows.Scan(&r.Seq, &nanos, &r.Actor, &r.Action, &r.Cluster, &r.Release, &r.detail, &r.PrevHash, &r.Hash); err != nil {
		return row{}, err
	}
	r.Time = time.Unix(0, nanos).UTC()
	return r, nil
}

func (r row) decode() (Record, error) {
	rec := r.Record
	if err := json.Unmarshal([]byte(r.detail), &rec.Detail); err != nil {
		return Record{}, fmt.Errorf("audit record %d: detail: %w", r.Seq, err)
	}
	if len(rec.Detail) == 0 {
		rec.Detail = nil
	}
	return rec, nil
}

// List returns the records f selects, in sequence order.
func (l *Log) List(ctx context.Context, f Filter) ([]Record, error) {
	rows, err := l.query(ctx, l.r, f)
	if err != nil {
		return nil, fmt.Errorf("audit list: %w", err)
	}
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, fmt.Errorf("audit list: %w", err)
		}
		rec, err := r.decode()
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit list: %w", err)
	}
	return slices.Clip(out), nil
}

// ExportJSONL writes the records f selects to w as JSON Lines, one record per line in
// sequence order, streaming: memory does not grow with the size of the log.
func (l *Log) ExportJSONL(ctx context.Context, w io.Writer, f Filter) error {
	rows, err := l.query(ctx, l.r, f)
	if err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	defer rows.Close()
	enc := json.NewEncoder(w)
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return fmt.Errorf("audit export: %w", err)
		}
		rec, err := r.decode()
		if err != nil {
			return err
		}
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("audit export: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	return nil
}
