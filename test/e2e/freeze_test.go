package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/cli"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestFreezeAndAuditedOverride: a freeze holds a new revision on real clusters; `sync
// --override` lands it on one cluster, once (the next commit is held there again), and the
// audit trail names the override's actor and reason; unfreeze lets the newest revision land
// everywhere.
func TestFreezeAndAuditedOverride(t *testing.T) {
	t.Parallel()
	srcDir, fleetDir := t.TempDir(), t.TempDir()
	src := newRepo(t, srcDir, map[string]string{"web/web.yaml": hookConfigMap("v1")})
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": fmt.Sprintf(webFleet, srcDir)})
	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{"fz-1": {"env": "prod"}, "fz-2": {"env": "prod"}})
	both := map[string][]string{"fz-1": {"web"}, "fz-2": {"web"}}
	f.waitStatus("v1 applied", 2*time.Minute, converged("", both))

	conn := []string{"--hub", f.hub.APIURL(), "--token", f.hub.AdminToken(), "--ca", f.hub.CAPath()}
	flotilla := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := cli.Run(t.Context(), append(args, conn...), &out, &errOut); code != 0 {
			t.Fatalf("flotilla %s: exit %d: %s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
		return out.String()
	}
	version := func(cluster string) string {
		v, _ := configMapData(t, f.clusters[cluster], "web", "web", "version")
		return v
	}
	// held: every cluster reports web Waiting with commit desired and not applied.
	held := func(commit string, clusters ...string) func(hubclient.StatusView) bool {
		return func(st hubclient.StatusView) bool {
			n := 0
			for _, a := range st.Assignments {
				for _, c := range clusters {
					if a.Cluster == c && a.Release == "web" && a.Phase == hubclient.PhaseWaiting &&
						containsCommit(a.DesiredRevision, commit) && !containsCommit(a.AppliedRevision, commit) {
						n++
					}
				}
			}
			return n == len(clusters)
		}
	}

	var fz hubclient.FreezeView
	if err := json.Unmarshal([]byte(flotilla("freeze", "--reason", "incident 4711: database failover", "-o", "json")), &fz); err != nil || fz.ID == "" {
		t.Fatalf("freeze -o json: %+v (%v)", fz, err)
	}
	v2 := src.commit("web v2", map[string]string{"web/web.yaml": hookConfigMap("v2")})
	st := f.waitStatus("v2 held by the freeze on both clusters", 2*time.Minute, held(v2, "fz-1", "fz-2"))
	for _, a := range st.Assignments {
		if !strings.Contains(a.Waiting, "incident 4711") {
			t.Errorf("%s on %s waits for %q, want the freeze's reason", a.Release, a.Cluster, a.Waiting)
		}
	}
	for _, c := range []string{"fz-1", "fz-2"} {
		if v := version(c); v != "v1" {
			t.Fatalf("%s: web's version %q under the freeze, want v1", c, v)
		}
	}

	// The override lands v2 on fz-1 only.
	var sv hubclient.SyncView
	if err := json.Unmarshal([]byte(flotilla("sync", "web", "--cluster", "fz-1", "--override", "--reason", "INC-4711 hotfix for login", "-o", "json")), &sv); err != nil || !sv.Override {
		t.Fatalf("sync --override -o json: %+v (%v)", sv, err)
	}
	eventually.Within(t, 90*time.Second, equal("web's version on fz-1 through the override", func() string { return version("fz-1") }, "v2"))
	f.waitStatus("fz-1 reports v2 Ready", 90*time.Second, func(st hubclient.StatusView) bool {
		for _, a := range st.Assignments {
			if a.Cluster == "fz-1" && a.Phase == hubclient.PhaseReady && containsCommit(a.AppliedRevision, v2) {
				return true
			}
		}
		return false
	})
	if st := f.waitStatus("fz-2 still held", 10*time.Second, held(v2, "fz-2")); version("fz-2") != "v1" {
		t.Fatalf("fz-2: web's version %q after an override for fz-1, want v1\n%s", version("fz-2"), dump(st))
	}

	// Once: the next commit is held on fz-1 again.
	v3 := src.commit("web v3", map[string]string{"web/web.yaml": hookConfigMap("v3")})
	f.waitStatus("v3 held by the freeze on both clusters", 2*time.Minute, held(v3, "fz-1", "fz-2"))
	if v1, v2 := version("fz-1"), version("fz-2"); v1 != "v2" || v2 != "v1" {
		t.Fatalf("under the freeze after the override: fz-1 %q, fz-2 %q; want v2 and v1", v1, v2)
	}

	// The audit trail shows the override with its actor and reason.
	var recs []hubclient.AuditRecord
	if err := json.Unmarshal([]byte(flotilla("audit", "--action", "sync.override", "-o", "json")), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Actor != "token:admin" || recs[0].Cluster != "fz-1" || recs[0].Release != "web" ||
		recs[0].Detail["reason"] != "INC-4711 hotfix for login" || recs[0].Detail["id"] != sv.ID {
		t.Errorf("sync.override audit records: %+v", recs)
	}

	// Unfreeze: v3 lands everywhere.
	flotilla("unfreeze", fz.ID)
	f.waitStatus("v3 applied everywhere after unfreeze", 2*time.Minute, converged(v3, both))
	for _, c := range []string{"fz-1", "fz-2"} {
		if v := version(c); v != "v3" {
			t.Errorf("%s: web's version %q after unfreeze, want v3", c, v)
		}
	}
}
