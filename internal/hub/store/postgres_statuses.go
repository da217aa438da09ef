package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// postgresPutStatuses upserts statuses in one statement: a report's statuses cost one round
// trip, not one each. NULL is the zero time, earlier than any other.
func postgresPutStatuses(ctx context.Context, tx *sql.Tx, cluster string, statuses []AssignmentStatus, now any) error {
	c := statusColumns(statuses)
	_, err := tx.ExecContext(ctx, statusColumnList+`
SELECT $1, s.* , $14::timestamptz FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
	$7::text[], $8::bigint[], $9::boolean[], $10::bigint[], $11::text[], $12::bytea[], $13::timestamptz[])
	AS s (release, observed_generation, revision, digest, phase, health, objects, drifted, conflicts, error, detail, reported_at)`+
		statusConflict+
		`WHERE coalesce(excluded.reported_at, '-infinity') >= coalesce(statuses.reported_at, '-infinity')`,
		cluster, c.release, c.observedGeneration, c.revision, c.digest, c.phase, c.health,
		c.objects, c.drifted, c.conflicts, c.errs, c.detail, c.reportedAt, now)
	if err != nil {
		return fmt.Errorf("statuses: %w", err)
	}
	return nil
}

// statusArrays are a report's statuses as one array per column, for unnest.
type statusArrays struct {
	release, revision, digest, phase, health, errs []string
	observedGeneration, objects, conflicts         []int64
	drifted                                        []bool
	detail                                         [][]byte
	reportedAt                                     []*time.Time
}

// statusColumns turns statuses into columns, one row per release. One statement may not
// update a row twice, so of several statuses of one release it keeps the one that applying
// them in order would leave: the last of those with the latest ReportedAt.
func statusColumns(statuses []AssignmentStatus) statusArrays {
	winner := map[string]int{}
	for i, st := range statuses {
		if j, ok := winner[st.Release]; !ok || !st.ReportedAt.Before(statuses[j].ReportedAt) {
			winner[st.Release] = i
		}
	}
	var c statusArrays
	for i, st := range statuses {
		if winner[st.Release] != i {
			continue
		}
		c.release = append(c.release, st.Release)
		c.observedGeneration = append(c.observedGeneration, st.ObservedGeneration)
		c.revision = append(c.revision, st.Revision)
		c.digest = append(c.digest, st.Digest)
		c.phase = append(c.phase, st.Phase)
		c.health = append(c.health, st.Health)
		c.objects = append(c.objects, int64(st.Objects))
		c.drifted = append(c.drifted, st.Drifted)
		c.conflicts = append(c.conflicts, int64(st.Conflicts))
		c.errs = append(c.errs, st.Error)
		c.detail = append(c.detail, st.Detail)
		var t *time.Time
		if !st.ReportedAt.IsZero() {
			u := st.ReportedAt.UTC()
			t = &u
		}
		c.reportedAt = append(c.reportedAt, t)
	}
	return c
}
