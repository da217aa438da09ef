package e2e

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestAudit: a fleet's first convergence leaves a complete, verifiable audit trail, and an
// edit made to the trail's file behind the hub's back is detected.
func TestAudit(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	rp := newRepo(t, repoDir, fleetFiles(repoURL))
	head := rp.commit("nothing", map[string]string{"README.md": "demo fleet\n"})
	f := newFleet(t, repoURL, map[string]map[string]string{
		"eu-prod":    {"env": "prod", "region": "eu"},
		"eu-staging": {"env": "staging", "region": "eu"},
	})
	want := map[string][]string{"eu-prod": {"baseline", "greeter"}, "eu-staging": {"baseline", "staging-tools"}}
	f.waitStatus("first convergence", 2*time.Minute, converged(head, want))

	ctx := t.Context()
	// Records of a report are written just after it is ingested: allow a moment. If they
	// are not all there by then, the subtests below say which are missing.
	var recs []hubclient.AuditRecord
	if err := eventually.Poll(ctx, 10*time.Second, func() error {
		var err error
		if recs, err = f.client.Audit(ctx, hubclient.AuditFilter{}); err != nil {
			t.Fatal(err)
		}
		if !readyApplies(recs, want) {
			return fmt.Errorf("no Ready apply record yet for every assignment of %v", want)
		}
		return nil
	}); err != nil {
		t.Log(err)
	}

	t.Run("records who changed what on which cluster", func(t *testing.T) {
		for cluster, releases := range want {
			for _, action := range []string{"cluster.added", "token.issued", "token.used"} {
				if !hasRecord(recs, action, cluster, "") {
					t.Errorf("no %s record for cluster %s", action, cluster)
				}
			}
			for _, rel := range releases {
				if !hasRecord(recs, "apply", cluster, rel) {
					t.Errorf("no apply record for release %s on cluster %s", rel, cluster)
				}
			}
		}
		if !readyApplies(recs, want) {
			t.Errorf("not every release has a Ready apply record at the head revision:\n%s", dumpAudit(recs))
		}
		for _, r := range recs {
			switch r.Action {
			case "cluster.added", "token.issued":
				// The bootstrap token's calls, named and with the role used.
				if r.Actor != "token:admin" || r.Detail["role"] != "admin" {
					t.Errorf("record %d %s: actor %q role %v, want token:admin with role admin", r.Seq, r.Action, r.Actor, r.Detail["role"])
				}
			case "token.used", "apply":
				if r.Actor != "agent:"+r.Cluster {
					t.Errorf("record %d %s: actor %q, want agent:%s", r.Seq, r.Action, r.Actor, r.Cluster)
				}
			}
			if r.Action == "token.issued" && r.Detail["token"] == nil {
				t.Errorf("record %d token.issued: no token ID: %v", r.Seq, r.Detail)
			}
			if r.Action == "token.used" && r.Detail["certificateSerial"] == nil {
				t.Errorf("record %d token.used: no certificate serial: %v", r.Seq, r.Detail)
			}
			if r.Action == "token.issued" || r.Action == "cluster.added" {
				for _, v := range r.Detail {
					if s, ok := v.(string); ok && strings.Contains(s, ".") && len(s) > 100 {
						t.Errorf("record %d %s holds what looks like a join token: %v", r.Seq, r.Action, r.Detail)
					}
				}
			}
		}
		var fleetRev *hubclient.AuditRecord
		for i := range recs {
			if recs[i].Action == "fleet.revision" {
				fleetRev = &recs[i]
			}
		}
		if fleetRev == nil || fleetRev.Actor != "hub" || !strings.Contains(fmt.Sprint(fleetRev.Detail["revision"]), head) ||
			fleetRev.Detail["author"] != "Platform Engineer <pe@example.com>" {
			t.Errorf("fleet.revision record = %+v; want actor hub, revision %s, the commit's author", fleetRev, head)
		}
		for i := 1; i < len(recs); i++ {
			if recs[i].Seq == recs[i-1].Seq+1 && recs[i].PrevHash != recs[i-1].Hash {
				t.Errorf("record %d: prevHash does not chain to record %d", recs[i].Seq, recs[i-1].Seq)
			}
		}
	})

	t.Run("filters by cluster, release and action", func(t *testing.T) {
		got, err := f.client.Audit(ctx, hubclient.AuditFilter{Cluster: "eu-staging", Release: "staging-tools", Action: "apply"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Fatal("no apply records for staging-tools on eu-staging")
		}
		for _, r := range got {
			if r.Cluster != "eu-staging" || r.Release != "staging-tools" || r.Action != "apply" {
				t.Errorf("filtered record %d is %s %s/%s", r.Seq, r.Action, r.Cluster, r.Release)
			}
		}
		if got, err := f.client.Audit(ctx, hubclient.AuditFilter{Since: time.Now().Add(time.Hour)}); err != nil || len(got) != 0 {
			t.Errorf("records from the future = %d, %v", len(got), err)
		}
	})

	t.Run("a relabel is recorded with old and new labels", func(t *testing.T) {
		tier := "gold"
		if _, err := f.client.LabelCluster(ctx, "eu-prod", map[string]*string{"tier": &tier}); err != nil {
			t.Fatal(err)
		}
		got, err := f.client.Audit(ctx, hubclient.AuditFilter{Cluster: "eu-prod", Action: "cluster.relabelled"})
		if err != nil || len(got) != 1 {
			t.Fatalf("relabel records = %v, %v", got, err)
		}
		old, _ := got[0].Detail["old"].(map[string]any)
		nw, _ := got[0].Detail["new"].(map[string]any)
		if old["tier"] != nil || nw["tier"] != "gold" || nw["env"] != "prod" {
			t.Errorf("relabel detail = %v", got[0].Detail)
		}
		calls, err := f.client.Audit(ctx, hubclient.AuditFilter{Cluster: "eu-prod", Action: "api.call"})
		if err != nil || len(calls) == 0 || calls[len(calls)-1].Detail["method"] != http.MethodPatch {
			t.Errorf("api.call records = %v, %v", calls, err)
		}
	})

	t.Run("verify passes on the intact trail", func(t *testing.T) {
		v, err := f.client.VerifyAudit(ctx)
		if err != nil || !v.OK || v.Checked < int64(len(recs)) || len(v.HeadHash) != 64 {
			t.Fatalf("VerifyAudit = %+v, %v", v, err)
		}
	})

	t.Run("verify names an edited record", func(t *testing.T) {
		var target int64
		for _, r := range recs {
			if r.Action == "token.used" {
				target = r.Seq
				break
			}
		}
		// While the hub runs: WAL lets another connection write the file.
		u := url.URL{Scheme: "file", Path: filepath.Join(f.hubOpts.DataDir, "audit.db"), OmitHost: true, RawQuery: "_pragma=busy_timeout(10000)"}
		db, err := sql.Open("sqlite", u.String())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, `UPDATE records SET detail = '{"token":"forged"}' WHERE seq = ?`, target); err != nil {
			t.Fatal(err)
		}
		_, err = f.client.VerifyAudit(ctx)
		var se *hubclient.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusConflict || !strings.Contains(err.Error(), fmt.Sprintf("audit record %d:", target)) || !strings.Contains(err.Error(), "edited") {
			t.Fatalf("VerifyAudit after editing record %d = %v; want 409 naming it", target, err)
		}
		t.Logf("verify reports: %v", err)
	})
}

func hasRecord(recs []hubclient.AuditRecord, action, cluster, release string) bool {
	for _, r := range recs {
		if r.Action == action && r.Cluster == cluster && (release == "" || r.Release == release) {
			return true
		}
	}
	return false
}

// readyApplies: every release of want has an apply record with phase Ready and objects.
func readyApplies(recs []hubclient.AuditRecord, want map[string][]string) bool {
	for cluster, releases := range want {
		for _, rel := range releases {
			ok := false
			for _, r := range recs {
				if r.Action == "apply" && r.Cluster == cluster && r.Release == rel && r.Detail["phase"] == "Ready" &&
					r.Detail["digest"] != "" && r.Detail["revision"] != "" && r.Detail["objects"] != float64(0) {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
	}
	return true
}

func dumpAudit(recs []hubclient.AuditRecord) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  %d %s %s %s/%s %v\n", r.Seq, r.Actor, r.Action, r.Cluster, r.Release, r.Detail)
	}
	return b.String()
}
