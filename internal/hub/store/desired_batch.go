package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// DesiredWrite is one cluster's document for PutDesiredStates.
type DesiredWrite struct {
	Cluster  string
	Document []byte
}

// DesiredWritten is what PutDesiredStates did with one DesiredWrite: PutDesiredState's
// results for it.
type DesiredWritten struct {
	Generation int64
	Changed    bool
	Err        error
}

// DesiredBatchSize is how many clusters' documents PutDesiredStates writes in one
// transaction. One transaction per cluster costs a PostgreSQL server five round trips each (10,000
// clusters: seconds); one for the whole fleet would hold SQLite's one writer, and every
// report waiting for it, for the whole write. A batch of documents of 20 assignments is about
// 5 MB.
const DesiredBatchSize = 500

// PutDesiredStates stores each write's document as PutDesiredState does, DesiredBatchSize
// clusters to a transaction, and returns the results in the order of writes. A cluster that
// is not registered gets ErrNotFound; a batch whose transaction fails gives each of its
// clusters the error; a cluster named twice gets an error the second time. The other
// batches are written all the same.
//
// Where rows are locked (PostgreSQL), a batch locks its clusters' rows (NO KEY UPDATE) in
// name order, so two replicas writing overlapping batches queue rather than deadlock.
func (s *sqlStore) PutDesiredStates(ctx context.Context, writes []DesiredWrite) []DesiredWritten {
	out := make([]DesiredWritten, len(writes))
	seen := make(map[string]bool, len(writes))
	batch := make([]int, 0, DesiredBatchSize) // indexes into writes
	flush := func() {
		if len(batch) > 0 {
			s.putDesiredBatch(ctx, writes, batch, out)
			batch = batch[:0]
		}
	}
	for i, w := range writes {
		if seen[w.Cluster] {
			out[i].Err = fmt.Errorf("desired state of cluster %q: written twice in one batch", w.Cluster)
			continue
		}
		seen[w.Cluster] = true
		if batch = append(batch, i); len(batch) == DesiredBatchSize {
			flush()
		}
	}
	flush()
	return out
}

// putDesiredBatch writes writes[i] for each i in batch in one transaction, into out[i].
func (s *sqlStore) putDesiredBatch(ctx context.Context, writes []DesiredWrite, batch []int, out []DesiredWritten) {
	names := make([]any, len(batch))
	for j, i := range batch {
		names[j] = writes[i].Cluster
	}
	in := placeholders(1, len(names))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, i := range batch {
			out[i] = DesiredWritten{} // a retried transaction starts afresh
		}
		registered, err := s.queryNames(ctx, tx, `
SELECT name FROM clusters WHERE name IN (`+in+`) ORDER BY name`+s.d.byteOrder+s.d.forLock("NO KEY UPDATE"), names)
		if err != nil {
			return err
		}
		stored := make(map[string]DesiredState, len(batch))
		rows, err := tx.QueryContext(ctx, `
SELECT cluster, generation, document FROM desired_states WHERE cluster IN (`+in+`)`, names...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var d DesiredState
			if err := rows.Scan(&d.Cluster, &d.Generation, &d.Document); err != nil {
				rows.Close()
				return err
			}
			stored[d.Cluster] = d
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		args := []any{s.d.time(s.now())}
		var values strings.Builder
		for _, i := range batch {
			w := writes[i]
			if !registered[w.Cluster] {
				out[i].Err = fmt.Errorf("desired state of cluster %q: cluster not registered: %w", w.Cluster, ErrNotFound)
				continue
			}
			d, ok := stored[w.Cluster]
			switch {
			case !ok:
				out[i].Generation, out[i].Changed = 1, true
			case bytes.Equal(d.Document, w.Document):
				out[i].Generation = d.Generation
				continue
			default:
				out[i].Generation, out[i].Changed = d.Generation+1, true
			}
			if values.Len() > 0 {
				values.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&values, "($%d, $%d, $%d, $1)", n+1, n+2, n+3)
			args = append(args, w.Cluster, out[i].Generation, notNil(w.Document))
		}
		if values.Len() == 0 {
			return nil
		}
		_, err = tx.ExecContext(ctx, `
INSERT INTO desired_states (cluster, generation, document, updated_at) VALUES `+values.String()+`
ON CONFLICT (cluster) DO UPDATE SET
	generation = excluded.generation, document = excluded.document, updated_at = excluded.updated_at`, args...)
		return err
	})
	if err != nil {
		for _, i := range batch {
			out[i] = DesiredWritten{Err: fmt.Errorf("desired state of cluster %q (written with %d others): %w", writes[i].Cluster, len(batch)-1, err)}
		}
	}
}

// queryNames runs a query of one text column and returns the values it returned.
func (s *sqlStore) queryNames(ctx context.Context, tx *sql.Tx, query string, args []any) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out[name] = true
	}
	return out, rows.Err()
}

// placeholders returns "$first, $first+1, ..." for n arguments.
func placeholders(first, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(first + i))
	}
	return b.String()
}

// DesiredStatePutter stores one cluster's desired state (Store does); a putter that also has
// PutDesiredStates (SQLite, Postgres) writes batches.
type DesiredStatePutter interface {
	PutDesiredState(ctx context.Context, cluster string, doc []byte) (generation int64, changed bool, err error)
}

// WriteDesiredStates stores writes through st, in transactions of DesiredBatchSize clusters
// where st writes batches and one by one otherwise, and calls done with each batch's writes
// and their results as soon as that batch is stored, so that the first clusters' agents are
// woken while the next batch is written.
func WriteDesiredStates(ctx context.Context, st DesiredStatePutter, writes []DesiredWrite, done func([]DesiredWrite, []DesiredWritten)) {
	batcher, ok := st.(interface {
		PutDesiredStates(ctx context.Context, writes []DesiredWrite) []DesiredWritten
	})
	if !ok {
		for i, w := range writes {
			var r DesiredWritten
			r.Generation, r.Changed, r.Err = st.PutDesiredState(ctx, w.Cluster, w.Document)
			done(writes[i:i+1], []DesiredWritten{r})
		}
		return
	}
	for start := 0; start < len(writes); start += DesiredBatchSize {
		batch := writes[start:min(start+DesiredBatchSize, len(writes))]
		done(batch, batcher.PutDesiredStates(ctx, batch))
	}
}
