package hub

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/agekeys"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pki"
	"github.com/flotilla/flotilla/internal/secrets"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

func newRecipient(t *testing.T) string {
	t.Helper()
	k, err := secrets.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k.Recipient
}

// TestAgeRecipients: the hub records each cluster's age recipient from its heartbeats (and
// audits a change once), shows it, lists the selected clusters' recipients with the recovery
// recipients for secret encrypt, refuses what is not a recipient, and forgets it with the
// cluster.
func TestAgeRecipients(t *testing.T) {
	t.Parallel()
	recovery := newRecipient(t)
	th := startHub(t, "", func(o *Options) { o.RecoveryRecipients = []string{recovery} })
	ctx := t.Context()
	eu := th.addAgent(t, "eu-1", map[string]string{"env": "prod"})
	th.addAgent(t, "us-1", map[string]string{"env": "prod"}) // no key yet
	dev := th.addAgent(t, "dev-1", map[string]string{"env": "dev"})

	first, second := newRecipient(t), newRecipient(t)
	beat := func(a *testAgent, r string) error {
		_, err := a.client.Heartbeat(ctx, connect.NewRequest(&agentv1.HeartbeatRequest{AgeRecipient: r}))
		return err
	}
	for _, r := range []string{first, first, first, second, second} {
		if err := beat(eu, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := beat(dev, newRecipient(t)); err != nil {
		t.Fatal(err)
	}
	c, err := th.api.Cluster(ctx, "eu-1")
	if err != nil || c.AgeRecipient != second {
		t.Fatalf("cluster eu-1 shows %q (%v), want the latest recipient", c.AgeRecipient, err)
	}
	recs, err := th.api.Audit(ctx, hubclient.AuditFilter{Cluster: "eu-1", Action: "cluster.agekey"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Detail["previous"] != first || recs[1].Detail["recipient"] != second || recs[0].Actor != "agent:eu-1" {
		t.Errorf("cluster.agekey records = %+v, want one for the first key and one for the change", recs)
	}

	t.Run("refused recipients", func(t *testing.T) {
		for _, bad := range []string{"age1nope", strings.Repeat("a", 200), "AGE-SECRET-KEY-1QQQ"} {
			err := beat(eu, bad)
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "age_recipient") {
				t.Errorf("heartbeat with %.20q: err = %v, want invalid_argument naming age_recipient", bad, err)
			}
		}
		// A join with a bad recipient is refused before its token is used.
		j, err := th.api.AddCluster(ctx, "new-1", nil)
		if err != nil {
			t.Fatal(err)
		}
		key, _ := pki.NewAgentKey()
		csr, _ := pki.CreateCSR(key, "new-1")
		_, err = th.joinClient().Join(ctx, connect.NewRequest(&agentv1.JoinRequest{Token: j.JoinToken, CsrPem: csr, AgeRecipient: "age1nope"}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("join with a bad recipient: %v", err)
		}
		r := newRecipient(t)
		if _, err := th.joinClient().Join(ctx, connect.NewRequest(&agentv1.JoinRequest{Token: j.JoinToken, CsrPem: csr, AgeRecipient: r})); err != nil {
			t.Fatalf("the token was used up by the refused join: %v", err)
		}
		if c, _ := th.api.Cluster(ctx, "new-1"); c.AgeRecipient != r {
			t.Errorf("join did not record the recipient: %q", c.AgeRecipient)
		}
	})

	t.Run("agekeys for secret encrypt", func(t *testing.T) {
		v, err := th.api.AgeKeys(ctx, []string{"env=prod"}, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Clusters) != 1 || v.Clusters[0].Name != "eu-1" || v.Clusters[0].AgeRecipient != second || len(v.Clusters[0].Projects) != 0 ||
			strings.Join(v.Missing, ",") != "us-1" || strings.Join(v.RecoveryRecipients, ",") != recovery {
			t.Errorf("agekeys env=prod = %+v", v)
		}
		v, err = th.api.AgeKeys(ctx, []string{"env=prod", "env=dev"}, "")
		if err != nil || len(v.Clusters) != 2 {
			t.Errorf("two selectors pick the clusters of either: %+v, %v", v, err)
		}
		for _, tc := range []struct {
			sels []string
			want string
		}{
			{nil, "at least one selector is required"},
			{[]string{""}, "selects every cluster"},
			{[]string{"env in (prod"}, `selector "env in (prod"`},
			{[]string{strings.Repeat("a", 1100)}, "at most 1024"},
		} {
			_, err := th.api.AgeKeys(ctx, tc.sels, "")
			var se *hubclient.StatusError
			if !errors.As(err, &se) || se.Code != 400 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("agekeys %q: err = %v, want 400 %q", tc.sels, err, tc.want)
			}
		}
	})

	t.Run("removed with its cluster", func(t *testing.T) {
		if err := th.api.RemoveCluster(ctx, "eu-1"); err != nil {
			t.Fatal(err)
		}
		if r, err := agekeys.Get(ctx, th.store, "eu-1"); err != nil || r != "" {
			t.Errorf("after removal: recipient %q, err %v; want none", r, err)
		}
	})
}

func TestRecoveryRecipientMustParse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = New(t.Context(), Options{DataDir: filepath.Join(dir, "hub"), Fleet: t.TempDir(), AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0",
		RecoveryRecipients: []string{"age1notakey"}}, st)
	if err == nil || !strings.Contains(err.Error(), `recovery recipient: age recipient "age1notakey"`) {
		t.Fatalf("err = %v, want the recovery recipient named", err)
	}
}

// TestProjectAgeRecipients: the per-project recipients an agent sends are shown with its
// cluster and listed for `secret encrypt --project P`; a viewer scoped to one project sees
// that project's recipient only, never which other teams deliver to the cluster.
func TestProjectAgeRecipients(t *testing.T) {
	t.Parallel()
	fleet := t.TempDir()
	project := func(name string) string {
		return "apiVersion: flotilla.dev/v1alpha1\nkind: Project\nmetadata: {name: " + name + "}\n" +
			"spec: {namespaces: [" + name + "], serviceAccount: {namespace: flotilla-tenants, name: " + name + "}}\n"
	}
	if err := os.WriteFile(filepath.Join(fleet, "fleet.yaml"), []byte(project("team-a")+"---\n"+project("team-b")), 0o644); err != nil {
		t.Fatal(err)
	}
	th := startHub(t, fleet, nil)
	ctx := t.Context()
	eu := th.addAgent(t, "eu-1", map[string]string{"env": "prod"})
	platform, teamA, teamB := newRecipient(t), newRecipient(t), newRecipient(t)
	if _, err := eu.client.Heartbeat(ctx, connect.NewRequest(&agentv1.HeartbeatRequest{AgeRecipient: platform,
		ProjectAgeRecipients: []*agentv1.ProjectAgeRecipient{{Project: "team-a", Recipient: teamA}, {Project: "team-b", Recipient: teamB}}})); err != nil {
		t.Fatal(err)
	}
	both := map[string]string{"team-a": teamA, "team-b": teamB}
	if c, err := th.api.Cluster(ctx, "eu-1"); err != nil || !maps.Equal(c.ProjectAgeRecipients, both) {
		t.Fatalf("admin: cluster eu-1 shows project recipients %v (%v), want %v", c.ProjectAgeRecipients, err, both)
	}
	if v, err := th.api.AgeKeys(ctx, []string{"env=prod"}, "team-a"); err != nil || len(v.Clusters) != 1 || v.Clusters[0].AgeRecipient != teamA || v.Project != "team-a" {
		t.Fatalf("admin: agekeys of team-a = %+v, %v; want eu-1's team-a recipient", v, err)
	}

	tok, err := th.api.CreateUserToken(ctx, hubclient.CreateUserTokenRequest{Name: "team-a-ci", Role: "viewer", Projects: []string{"team-a"}})
	if err != nil {
		t.Fatal(err)
	}
	viewer, err := hubclient.NewClient(hubclient.Config{Hub: th.APIURL(), Token: tok.Token, CAFile: th.CAPath()})
	if err != nil {
		t.Fatal(err)
	}
	var c hubclient.ClusterView
	eventually.Within(t, time.Minute, func() error {
		if c, err = viewer.Cluster(ctx, "eu-1"); err != nil {
			return fmt.Errorf("the viewer of team-a does not see eu-1 yet (the fleet with its Project loaded): %w", err)
		}
		return nil
	})
	if want := map[string]string{"team-a": teamA}; !maps.Equal(c.ProjectAgeRecipients, want) {
		t.Errorf("viewer of team-a: cluster eu-1 shows project recipients %v, want %v", c.ProjectAgeRecipients, want)
	}
	v, err := viewer.AgeKeys(ctx, []string{"env=prod"}, "team-a")
	if err != nil || len(v.Clusters) != 1 || v.Clusters[0].AgeRecipient != teamA || !maps.Equal(v.Clusters[0].Projects, map[string]string{"team-a": teamA}) {
		t.Errorf("viewer of team-a: agekeys of team-a = %+v, %v; want team-a's recipient and no other project", v, err)
	}
}
