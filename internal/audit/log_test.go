package audit

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/sqlitedb"
)

func openTest(t testing.TB) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	l, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

// rawExec changes the file behind the log's back, as someone with access to it could.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", sqlitedb.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)

// fill appends n apply records for clusters c0..c2 and releases r0..r1, a minute apart.
func fill(t testing.TB, l *Log, n int) []Record {
	t.Helper()
	var out []Record
	for i := range n {
		rec, err := l.Append(context.Background(), Event{
			Time: t0.Add(time.Duration(i) * time.Minute), Actor: fmt.Sprintf("agent:c%d", i%3), Action: "apply",
			Cluster: fmt.Sprintf("c%d", i%3), Release: fmt.Sprintf("r%d", i%2),
			Detail: map[string]any{"revision": fmt.Sprintf("main@sha1:%040d", i), "created": i, "phase": "Ready"},
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

func TestAppendChainsRecords(t *testing.T) {
	t.Parallel()
	l, _ := openTest(t)
	recs := fill(t, l, 3)
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Errorf("record %d: seq = %d", i, r.Seq)
		}
		if len(r.Hash) != 64 {
			t.Errorf("record %d: hash %q is not hex sha256", i, r.Hash)
		}
	}
	if recs[0].PrevHash != strings.Repeat("0", 64) {
		t.Errorf("first PrevHash = %q, want 64 zeros", recs[0].PrevHash)
	}
	if recs[1].PrevHash != recs[0].Hash || recs[2].PrevHash != recs[1].Hash {
		t.Error("PrevHash does not chain to the previous record's Hash")
	}
	got, err := l.List(t.Context(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got[0].Time.Equal(t0) || got[0].Time.Location() != time.UTC || got[2].Hash != recs[2].Hash {
		t.Errorf("List = %+v", got)
	}
	if got[1].Detail["created"] != float64(1) || got[1].Detail["phase"] != "Ready" {
		t.Errorf("detail read back = %v", got[1].Detail)
	}
	if _, err := l.Append(t.Context(), Event{Action: "apply"}); err == nil {
		t.Error("an event without an actor was appended")
	}
	if _, err := l.Append(t.Context(), Event{Actor: "hub", Action: "x", Detail: map[string]any{"bad": func() {}}}); err == nil {
		t.Error("a detail that is not JSON was appended")
	}
}

func TestHashIsCanonical(t *testing.T) {
	t.Parallel()
	e := Event{Time: t0, Actor: "admin", Action: "cluster.added", Cluster: "eu"}
	a, _ := canonicalDetail(map[string]any{"b": 1, "a": map[string]any{"y": 2, "x": 1}})
	b, _ := canonicalDetail(map[string]any{"a": map[string]any{"x": 1, "y": 2}, "b": 1})
	if string(a) != `{"a":{"x":1,"y":2},"b":1}` || !bytes.Equal(a, b) {
		t.Fatalf("canonical detail = %s and %s", a, b)
	}
	big, _ := canonicalDetail(map[string]any{"n": int64(1<<62 + 1)})
	if string(big) != `{"n":4611686018427387905}` {
		t.Errorf("int64 detail = %s: digits lost", big)
	}
	h := hashRecord(1, e, a, genesisHash)
	for name, other := range map[string]string{
		"seq":     hashRecord(2, e, a, genesisHash),
		"time":    hashRecord(1, Event{Time: t0.Add(1), Actor: e.Actor, Action: e.Action, Cluster: e.Cluster}, a, genesisHash),
		"actor":   hashRecord(1, Event{Time: t0, Actor: "admin2", Action: e.Action, Cluster: e.Cluster}, a, genesisHash),
		"shifted": hashRecord(1, Event{Time: t0, Actor: e.Actor, Action: e.Action + "e", Cluster: "u"}, a, genesisHash),
		"detail":  hashRecord(1, e, []byte(`{"a":{"x":1,"y":2},"b":2}`), genesisHash),
		"prev":    hashRecord(1, e, a, strings.Repeat("1", 64)),
	} {
		if other == h {
			t.Errorf("changing %s does not change the hash", name)
		}
	}
	// The same instant in another zone is the same record.
	if hashRecord(1, Event{Time: t0.In(time.FixedZone("x", 3600)), Actor: e.Actor, Action: e.Action, Cluster: e.Cluster}, a, genesisHash) != h {
		t.Error("the hash depends on the time zone")
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	l, _ := openTest(t)
	fill(t, l, 12)
	if _, err := l.Append(t.Context(), Event{Time: t0.Add(time.Hour), Actor: "admin", Action: "cluster.added", Cluster: "c9"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		f       Filter
		wantSeq []int64
	}{
		{"everything", Filter{}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
		{"by cluster", Filter{Cluster: "c1"}, []int64{2, 5, 8, 11}},
		{"by cluster and release", Filter{Cluster: "c1", Release: "r1"}, []int64{2, 8}},
		{"by action", Filter{Action: "cluster.added"}, []int64{13}},
		{"since, inclusive", Filter{Since: t0.Add(10 * time.Minute)}, []int64{11, 12, 13}},
		{"limit keeps the newest, in order", Filter{Limit: 3}, []int64{11, 12, 13}},
		{"limit with a filter", Filter{Cluster: "c0", Limit: 2}, []int64{7, 10}},
		{"nothing matches", Filter{Release: "nope"}, nil},
		{"excluding an action", Filter{ExcludeActions: []string{"apply"}}, []int64{13}},
		{"excluding actions, with a limit", Filter{ExcludeActions: []string{"cluster.added", "other"}, Limit: 2}, []int64{11, 12}},
		{"excluding an action none has", Filter{ExcludeActions: []string{ActionVerified}, Cluster: "c9"}, []int64{13}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.List(t.Context(), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, r := range got {
				seqs = append(seqs, r.Seq)
			}
			if fmt.Sprint(seqs) != fmt.Sprint(tt.wantSeq) {
				t.Errorf("seqs = %v, want %v", seqs, tt.wantSeq)
			}
			var buf bytes.Buffer
			if err := l.ExportJSONL(t.Context(), &buf, tt.f); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(&buf)
			var lines []int64
			for sc.Scan() {
				var r Record
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("line %q: %v", sc.Text(), err)
				}
				lines = append(lines, r.Seq)
			}
			if fmt.Sprint(lines) != fmt.Sprint(tt.wantSeq) {
				t.Errorf("JSON Lines seqs = %v, want %v", lines, tt.wantSeq)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tamper  func(t *testing.T, path string, recs []Record)
		wantSeq int64 // 0: intact
		wantMsg string
	}{
		{name: "intact log passes"},
		{
			name: "edited detail",
			tamper: func(t *testing.T, p string, _ []Record) {
				rawExec(t, p, `UPDATE records SET detail = '{"created":99}' WHERE seq = 3`)
			},
			wantSeq: 3, wantMsg: "edited",
		},
		{
			name: "edited actor",
			tamper: func(t *testing.T, p string, _ []Record) {
				rawExec(t, p, `UPDATE records SET actor = 'admin' WHERE seq = 1`)
			},
			wantSeq: 1, wantMsg: "edited",
		},
		{
			name:    "deleted middle record",
			tamper:  func(t *testing.T, p string, _ []Record) { rawExec(t, p, `DELETE FROM records WHERE seq = 2`) },
			wantSeq: 2, wantMsg: "deleted",
		},
		{
			name:    "deleted last record",
			tamper:  func(t *testing.T, p string, _ []Record) { rawExec(t, p, `DELETE FROM records WHERE seq = 5`) },
			wantSeq: 5, wantMsg: "tail was deleted",
		},
		{
			name: "deleted last record and rewound the head",
			tamper: func(t *testing.T, p string, recs []Record) {
				rawExec(t, p, `DELETE FROM records WHERE seq = 5`, fmt.Sprintf(`UPDATE head SET seq = 4, hash = '%s'`, recs[3].Hash))
			},
			wantSeq: 0, // undetectable from inside the file: why Head is meant to be kept elsewhere
		},
		{
			name: "edited and re-hashed record",
			tamper: func(t *testing.T, p string, recs []Record) {
				r := recs[2]
				r.Actor = "admin"
				detail, _ := canonicalDetail(r.Detail)
				h := hashRecord(r.Seq, r.Event, detail, r.PrevHash)
				rawExec(t, p, fmt.Sprintf(`UPDATE records SET actor = 'admin', hash = '%s' WHERE seq = 3`, h))
			},
			wantSeq: 4, wantMsg: "previous hash does not match record 3",
		},
		{
			name: "inserted record",
			tamper: func(t *testing.T, p string, recs []Record) {
				rawExec(t, p, fmt.Sprintf(`INSERT INTO records SELECT 6, time, actor, action, cluster, release, detail, '%s', hash FROM records WHERE seq = 5`, recs[4].Hash))
			},
			wantSeq: 6, wantMsg: "edited",
		},
		{
			name:    "head removed",
			tamper:  func(t *testing.T, p string, _ []Record) { rawExec(t, p, `DELETE FROM head`) },
			wantSeq: 5, wantMsg: "head row is missing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, path := openTest(t)
			recs := fill(t, l, 5)
			if tt.tamper != nil {
				tt.tamper(t, path, recs)
			}
			checked, err := l.Verify(t.Context())
			if tt.wantSeq == 0 {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if checked < 4 {
					t.Errorf("checked = %d", checked)
				}
				return
			}
			var ce *ChainError
			if !errors.As(err, &ce) {
				t.Fatalf("Verify = %d, %v; want a *ChainError", checked, err)
			}
			if ce.Seq != tt.wantSeq || !strings.Contains(err.Error(), tt.wantMsg) || !strings.HasPrefix(err.Error(), fmt.Sprintf("audit record %d: ", tt.wantSeq)) {
				t.Errorf("Verify error = %q (seq %d); want seq %d and %q", err, ce.Seq, tt.wantSeq, tt.wantMsg)
			}
		})
	}
}

func TestVerifyEmptyLog(t *testing.T) {
	t.Parallel()
	l, _ := openTest(t)
	if n, err := l.Verify(t.Context()); n != 0 || err != nil {
		t.Errorf("Verify = %d, %v", n, err)
	}
	if seq, hash, err := l.Head(t.Context()); seq != 0 || hash != genesisHash || err != nil {
		t.Errorf("Head = %d, %q, %v", seq, hash, err)
	}
}

func TestConcurrentAppendsKeepTheChain(t *testing.T) {
	t.Parallel()
	l, path := openTest(t)
	const goroutines, each = 20, 10
	var wg sync.WaitGroup
	errs := make([]error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if _, err := l.Append(t.Context(), Event{Actor: fmt.Sprintf("agent:c%d", g), Action: "apply", Cluster: fmt.Sprintf("c%d", g), Detail: map[string]any{"i": i}}); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	n, err := l.Verify(t.Context())
	if err != nil || n != goroutines*each {
		t.Fatalf("Verify = %d, %v; want %d, nil", n, err, goroutines*each)
	}
	// Reopened, the log continues the same chain.
	l.Close()
	l2, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	rec, err := l2.Append(t.Context(), Event{Actor: "hub", Action: "fleet.revision"})
	if err != nil || rec.Seq != goroutines*each+1 {
		t.Fatalf("append after reopen = %d, %v", rec.Seq, err)
	}
	if n, err := l2.Verify(t.Context()); err != nil || n != goroutines*each+1 {
		t.Fatalf("Verify after reopen = %d, %v", n, err)
	}
}
