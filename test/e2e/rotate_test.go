package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestRenewalRevocationAndRotate runs a real agent whose certificates live seconds: each
// renewal revokes the certificate it replaces once the agent uses the new one, and the agent
// keeps converging through them. Then `cluster rotate` locks the agent out without deleting
// the cluster's history, and the agent re-joins with the token rotate printed.
func TestRenewalRevocationAndRotate(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	rp := newRepo(t, repoDir, fleetFiles(repoURL))
	f := newFleet(t, repoURL, map[string]map[string]string{"eu-prod": {"env": "prod", "region": "eu"}},
		func(o *hub.Options) { o.CertTTL, o.TokenTTL = 8*time.Second, time.Minute })
	want := map[string][]string{"eu-prod": {"baseline", "greeter"}}
	f.waitStatus("first convergence", time.Minute, converged(rp.commit("start", map[string]string{"README.md": "x\n"}), want))

	// Renewals revoke what they replace, and the agent is not locked out by its own.
	// The certificates live 8 s, renewed at two thirds of that on the agent's wall clock and
	// checked by TLS against the wall clock: real time, which no test clock moves.
	eventually.Within(t, time.Minute, func() error {
		recs, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Cluster: "eu-prod"})
		if err != nil {
			t.Fatal(err)
		}
		renewed, revoked := map[string]string{}, 0
		for _, r := range recs {
			switch r.Action {
			case "certificate.renewed":
				renewed[r.Detail["certificateSerial"].(string)] = r.Detail["replaces"].(string)
			case "certificate.revoked":
				if r.Detail["reason"] == "renewed" && renewed[r.Detail["replacedBy"].(string)] == r.Detail["certificateSerial"] {
					revoked++
				}
			}
		}
		if revoked < 2 {
			return fmt.Errorf("8s certificates: %d renewals, %d revocations of the certificate a renewal replaced; want at least 2", len(renewed), revoked)
		}
		return nil
	})
	commit := rp.commit("after renewals", map[string]string{"apps/greeter/greeter.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeter}\ndata: {message: renewed}\n"})
	f.waitStatus("convergence after renewals revoked the replaced certificates", time.Minute, converged(commit, want))

	// Rotate: every certificate revoked; the agent gets nothing new.
	v, err := f.client.RotateCluster(t.Context(), "eu-prod")
	if err != nil {
		t.Fatal(err)
	}
	if v.RevokedCertificates < 1 || v.JoinToken == "" {
		t.Fatalf("rotate: %+v; want at least one certificate revoked and a new join token", v)
	}
	locked := rp.commit("while locked out", map[string]string{"apps/greeter/greeter.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeter}\ndata: {message: locked-out}\n"})
	// The hub has the commit in eu-prod's desired state, and the agent has asked for its
	// desired state since and been refused: it got nothing, and not for want of asking. Once,
	// not more: by now its reconnects back off towards 30 s, and two took over a minute on a
	// loaded machine.
	f.waitStatus("the commit in eu-prod's desired state", time.Minute, func(st hubclient.StatusView) bool {
		for _, a := range st.Assignments {
			if a.Cluster == "eu-prod" && a.Release == "greeter" && containsCommit(a.DesiredRevision, locked) {
				return true
			}
		}
		return false
	})
	refusal := []string{"watch interrupted", "revoked"}
	refused := f.agentLogs["eu-prod"].count(refusal...)
	eventually.Within(t, time.Minute, func() error {
		if n := f.agentLogs["eu-prod"].count(refusal...) - refused; n < 1 {
			return fmt.Errorf("the agent's watch refused %d times since the commit reached its desired state, want at least once", n)
		}
		return nil
	})
	if got, _ := configMapData(t, f.clusters["eu-prod"], "greeter", "greeter", "message"); got != "renewed" {
		t.Fatalf("greeter message %q after rotate; want %q: a rotated cluster's agent must get nothing", got, "renewed")
	}
	c, err := f.client.Cluster(t.Context(), "eu-prod")
	if err != nil || c.Labels["env"] != "prod" {
		t.Fatalf("cluster after rotate: %+v, %v; want it kept with its labels", c, err)
	}

	// Re-join as rotate says: a new state dir and the new token.
	f.stopAgent("eu-prod")
	if err := os.RemoveAll(filepath.Join(f.dir, "agents", "eu-prod")); err != nil {
		t.Fatal(err)
	}
	f.startAgent("eu-prod", v.JoinToken)
	f.waitStatus("convergence after re-joining", time.Minute, converged(locked, want))
	recs, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Cluster: "eu-prod"})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, r := range recs {
		actions = append(actions, r.Action)
	}
	if got := strings.Join(actions, " "); !strings.Contains(got, "cluster.rotated") || !slices.Contains(actions, "apply") {
		t.Errorf("audit of eu-prod: %s; want its history kept and cluster.rotated in it", got)
	}
}
