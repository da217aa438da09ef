package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hub/store"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// flotilla drift names the manager behind each drifted field, and --suggest prints the
// ignore rule or respectManagers entry that silences it, as YAML a Release's spec takes.
func TestDriftManagersAndSuggestions(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 3, Releases: 1})
	// Reports as an agent sends them: the drift summary and the object details with values
	// and managers. Cluster 1 reports the same replicas drift, from the same manager.
	details := map[string]*agentv1.AssignmentStatus{
		"cluster-0000": {Release: "release-00", Drifted: true,
			Drift: []*agentv1.DriftedObject{
				{Object: "deployment.apps/web", Namespace: "apps", Paths: []string{`.metadata.annotations["example.com/ca"]`, ".spec.replicas"}},
				{Object: "configmap/settings", Namespace: "apps", Paths: []string{".data.removed"}},
				{Object: "configmap/gone", Namespace: "apps", Paths: []string{"(deleted)"}},
			},
			ObjectDetails: []*agentv1.ObjectDetail{
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "apps", Name: "web", Action: "drifted", Drift: []*agentv1.FieldDrift{
					{Path: `.metadata.annotations["example.com/ca"]`, Desired: `"a"`, Live: `"b"`, Manager: "cert-manager-cainjector"},
					{Path: ".spec.replicas", Desired: "2", Live: "5", Manager: "kubectl-patch"},
				}},
				{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "settings", Action: "drifted", Drift: []*agentv1.FieldDrift{
					{Path: ".data.removed", Desired: `"1"`}}},
				{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "gone", Action: "drifted", Drift: []*agentv1.FieldDrift{{Path: "(deleted)"}}},
			}},
		"cluster-0001": {Release: "release-00", Drifted: true,
			Drift: []*agentv1.DriftedObject{{Object: "deployment.apps/web", Namespace: "apps", Paths: []string{".spec.replicas"}}},
			ObjectDetails: []*agentv1.ObjectDetail{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "apps", Name: "web", Action: "drifted",
				Drift: []*agentv1.FieldDrift{{Path: ".spec.replicas", Desired: "2", Live: "7", Manager: "kubectl-patch"}}}}},
	}
	for _, seeded := range f.Seeded {
		report, ok := details[seeded.Cluster]
		if !ok {
			continue
		}
		st := seeded
		st.Drifted = true
		report.Revision, report.Digest, report.Phase, report.Health = st.Revision, st.Digest, st.Phase, st.Health
		var err error
		if st.Detail, err = protojson.Marshal(report); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Store.IngestReport(t.Context(), st.Cluster, 2, []store.AssignmentStatus{st}); err != nil {
			t.Fatal(err)
		}
	}
	conn := []string{"--hub", f.APIURL, "--token", f.AdminToken, "--ca", f.CAPath}
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Run(t.Context(), append(args, conn...), &out, &errOut); code != 0 {
			t.Fatalf("flotilla %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		return out.String()
	}

	t.Run("the table names each field's manager", func(t *testing.T) {
		out := run(t, "drift", "--cluster", "cluster-0000")
		want := `.metadata.annotations["example.com/ca"] (cert-manager-cainjector),.spec.replicas (kubectl-patch)`
		if !strings.Contains(out, want) {
			t.Errorf("drift:\n%s\nwant a line with %s", out, want)
		}
	})

	t.Run("suggest prints a rule per field that a Release's spec takes", func(t *testing.T) {
		out := run(t, "drift", "--suggest")
		for _, want := range []string{
			"# release release-00, deployment.apps/web in namespace apps: .spec.replicas (written by kubectl-patch)\n# clusters: cluster-0000, cluster-0001\n",
			"# release release-00, configmap/gone in namespace apps: (deleted)\n# clusters: cluster-0000\n# the whole object was deleted: no rule keeps it deleted",
			"configmap/settings in namespace apps: .data.removed\n# clusters: cluster-0000\n# the field was removed live: an ignore rule keeps live values",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("drift --suggest:\n%s\nwant it to contain:\n%s", out, want)
			}
		}
		// Every snippet is a valid Release spec; together they name what each field needs.
		var ignore []v1alpha1.IgnoreRule
		var respect []string
		for _, snippet := range specSnippets(out) {
			var doc struct {
				Spec v1alpha1.ReleaseSpec `json:"spec"`
			}
			if err := yaml.UnmarshalStrict([]byte(snippet), &doc); err != nil {
				t.Fatalf("snippet is not a Release spec: %v\n%s", err, snippet)
			}
			ignore = append(ignore, doc.Spec.Ignore...)
			respect = append(respect, doc.Spec.RespectManagers...)
		}
		target := v1alpha1.IgnoreTarget{Group: "apps", Kind: "Deployment", Name: "web", Namespace: "apps"}
		wantIgnore := []v1alpha1.IgnoreRule{
			{Target: target, Paths: []string{"/metadata/annotations/example.com~1ca"}},
			{Target: target, Paths: []string{"/spec/replicas"}},
		}
		if d := cmp.Diff(wantIgnore, ignore); d != "" {
			t.Errorf("ignore rules (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{"cert-manager-cainjector", "kubectl-patch"}, respect); d != "" {
			t.Errorf("respectManagers (-want +got):\n%s", d)
		}
	})

	t.Run("suggest as JSON", func(t *testing.T) {
		var got []suggestion
		if err := json.Unmarshal([]byte(run(t, "drift", "--suggest", "--release", "release-00", "-o", "json")), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 || got[3].Path != ".spec.replicas" || len(got[3].Clusters) != 2 || got[3].Ignore == nil || got[3].Ignore.Paths[0] != "/spec/replicas" {
			t.Errorf("drift --suggest -o json: %+v", got)
		}
		if out := run(t, "drift", "--suggest", "--cluster", "cluster-0002"); out != "No drift reported.\n" {
			t.Errorf("drift --suggest of nothing: %q", out)
		}
	})
}

// specSnippets are the "spec:" blocks of drift --suggest's output.
func specSnippets(out string) []string {
	var snippets []string
	var cur []string
	flush := func() {
		if cur != nil {
			snippets = append(snippets, strings.Join(cur, "\n")+"\n")
			cur = nil
		}
	}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == "spec:":
			flush()
			cur = []string{line}
		case cur != nil && strings.HasPrefix(line, "  "):
			cur = append(cur, line)
		default:
			flush()
		}
	}
	flush()
	return snippets
}
