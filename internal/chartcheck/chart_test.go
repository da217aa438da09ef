package chartcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/internal/install"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
	"github.com/flotilla/flotilla/internal/render"
)

const chartDir = "../../deploy/chart/flotilla"

// valueSet is a set of values users install, and the namespace they install it in.
type valueSet struct {
	name      string
	namespace string
	values    string
	wantKinds []string
}

var valueSets = []valueSet{
	{
		name: "hub on SQLite", namespace: "flotilla-system",
		values: `
hub:
  fleet: {url: "https://git.example.com/platform/fleet.git", branch: main}
  webhooks: [{provider: github, secretName: flotilla-webhooks, key: github}]
`,
		wantKinds: []string{"PersistentVolumeClaim", "Deployment", "Service", "Service"},
	},
	{
		name: "hub on PostgreSQL, 3 replicas", namespace: "flotilla-hub",
		values: `
hub:
  replicas: 3
  store:
    type: postgres
    postgres: {secretName: flotilla-hub-store, passwordKey: password, secretsKeySecretName: flotilla-hub-secrets}
  fleet: {url: "https://git.example.com/platform/fleet.git", path: "clusters/prod"}
  hosts: [hub.example.com]
  credentials: {secretName: flotilla-credentials}
  webhooks:
    - {provider: github, secretName: flotilla-webhooks, key: github}
    - {provider: gitlab, secretName: flotilla-webhooks, key: gitlab}
  service:
    agents: {type: LoadBalancer}
`,
		wantKinds: []string{"StatefulSet", "Service", "Service", "PodDisruptionBudget"},
	},
	{
		name: "agent alone", namespace: "flotilla-system",
		values: `
hub: {enabled: false}
agent:
  enabled: true
  hubURL: https://hub.example.com:8443,https://hub-1.example.com:8443
  platformAdmin: true
`,
		wantKinds: []string{"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "PersistentVolumeClaim", "Deployment"},
	},
	{
		name: "hub and agent in one cluster, agent state in an emptyDir", namespace: "flotilla-system",
		values: `
hub:
  fleet: {url: "https://git.example.com/platform/fleet.git"}
agent:
  enabled: true
  state: {persistence: false}
`,
		wantKinds: []string{"PersistentVolumeClaim", "Deployment", "Service", "Service", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Deployment"},
	},
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load %s: %v", chartDir, err)
	}
	return c
}

func parseValues(t *testing.T, s string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &vals); err != nil {
		t.Fatalf("values: %v", err)
	}
	return vals
}

// renderChart renders the chart as `helm install --dry-run` does, without a cluster.
func renderChart(c *chart.Chart, namespace string, vals map[string]any) ([]*unstructured.Unstructured, string, error) {
	inst := action.NewInstall(&action.Configuration{})
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = "flotilla", namespace
	rel, err := inst.Run(c, vals)
	if err != nil {
		return nil, "", err
	}
	var objs []*unstructured.Unstructured
	docs := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(rel.Manifest)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, "", err
		}
		data, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, "", fmt.Errorf("%w in:\n%s", err, doc)
		}
		if s := strings.TrimSpace(string(data)); s == "null" || s == "{}" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, "", fmt.Errorf("%w in:\n%s", err, doc)
		}
		if u.GetNamespace() == "" && namespaced(u.GetKind()) {
			// Helm sets the namespace when it applies; so does the dry-run below.
			u.SetNamespace(namespace)
		}
		objs = append(objs, u)
	}
	return objs, rel.Info.Notes, nil
}

func namespaced(kind string) bool {
	return kind != "ClusterRole" && kind != "ClusterRoleBinding" && kind != "Namespace"
}

func TestChartLints(t *testing.T) {
	t.Parallel()
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			t.Parallel()
			l := action.NewLint()
			l.Strict, l.Namespace = true, vs.namespace
			res := l.Run([]string{chartDir}, parseValues(t, vs.values))
			for _, m := range res.Messages {
				// INFO is advice (an icon); anything from WARNING up is a fault of the chart.
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				}
			}
			for _, err := range res.Errors {
				t.Errorf("lint error: %v", err)
			}
		})
	}
}

func TestChartRenders(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			objs, notes, err := renderChart(c, vs.namespace, parseValues(t, vs.values))
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
				checkPodSecurity(t, o)
			}
			slices.Sort(kinds)
			want := slices.Clone(vs.wantKinds)
			slices.Sort(want)
			if !slices.Equal(kinds, want) {
				t.Errorf("kinds = %v, want %v", kinds, want)
			}
			if notes == "" {
				t.Error("no NOTES")
			}
		})
	}
}

// checkPodSecurity wants every pod non-root, without privilege escalation, capabilities or a
// writable root filesystem, and on the chart's image.
func checkPodSecurity(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	spec, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
	if !ok {
		return
	}
	if nonRoot, _, _ := unstructured.NestedBool(spec, "securityContext", "runAsNonRoot"); !nonRoot {
		t.Errorf("%s %s: pod may run as root", o.GetKind(), o.GetName())
	}
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	for _, c := range containers {
		c := c.(map[string]any)
		if esc, found, _ := unstructured.NestedBool(c, "securityContext", "allowPrivilegeEscalation"); !found || esc {
			t.Errorf("%s %s: container %s may escalate privileges", o.GetKind(), o.GetName(), c["name"])
		}
		if ro, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !ro {
			t.Errorf("%s %s: container %s has a writable root filesystem", o.GetKind(), o.GetName(), c["name"])
		}
		// With a read-only root, temporary files (the hub's SSH known hosts) need a volume.
		mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
		if !slices.ContainsFunc(mounts, func(m any) bool { return m.(map[string]any)["mountPath"] == "/tmp" }) {
			t.Errorf("%s %s: container %s has no writable /tmp", o.GetKind(), o.GetName(), c["name"])
		}
		if drop, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "drop"); !slices.Equal(drop, []string{"ALL"}) {
			t.Errorf("%s %s: container %s drops capabilities %v, want [ALL]", o.GetKind(), o.GetName(), c["name"], drop)
		}
		// The hub runs the CLI's image, the agent its own, whose entrypoint runs the agent.
		want := "ghcr.io/flotilla/flotilla:v0.1.0"
		if c["name"] == "agent" {
			want = "ghcr.io/flotilla/flotilla-agent:v0.1.0"
			if args, _, _ := unstructured.NestedStringSlice(c, "args"); len(args) == 0 || args[0] == "agent" {
				t.Errorf("%s %s: the agent's image runs with args %q, want its flags first", o.GetKind(), o.GetName(), args)
			}
		}
		if img := c["image"]; img != want {
			t.Errorf("%s %s: image %v, want %s (the chart's appVersion)", o.GetKind(), o.GetName(), img, want)
		}
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func containerOf(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	if o == nil {
		t.Fatal("no such object")
	}
	containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("%s %s: %d containers, want 1", o.GetKind(), o.GetName(), len(containers))
	}
	return containers[0].(map[string]any)
}

func argsOf(t *testing.T, o *unstructured.Unstructured) []string {
	t.Helper()
	args, _, _ := unstructured.NestedStringSlice(containerOf(t, o), "args")
	return args
}

func TestChartHub(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	t.Run("SQLite: one replica of a Deployment on a volume", func(t *testing.T) {
		objs, _, err := renderChart(c, "flotilla-system", parseValues(t, valueSets[0].values))
		if err != nil {
			t.Fatal(err)
		}
		d := find(objs, "Deployment", "flotilla-hub")
		if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 1 {
			t.Errorf("replicas = %d, want 1", n)
		}
		if s, _, _ := unstructured.NestedString(d.Object, "spec", "strategy", "type"); s != "Recreate" {
			t.Errorf("strategy = %q, want Recreate: two pods must never share hub.db", s)
		}
		args := argsOf(t, d)
		for _, want := range []string{"--data-dir=/data", "--fleet=https://git.example.com/platform/fleet.git", "--fleet-branch=main",
			"--host=flotilla-hub.flotilla-system.svc", "--host=flotilla-hub-api.flotilla-system.svc",
			"--webhook-secret-file=github=/etc/flotilla/webhooks/github/secret"} {
			if !slices.Contains(args, want) {
				t.Errorf("hub args %q lack %s", args, want)
			}
		}
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--store") }) {
			t.Errorf("SQLite hub args %q name a --store", args)
		}
		if find(objs, "PersistentVolumeClaim", "flotilla-hub-data") == nil {
			t.Error("no PVC flotilla-hub-data")
		}
		for name, port := range map[string]int64{"flotilla-hub": 8443, "flotilla-hub-api": 8444} {
			svc := find(objs, "Service", name)
			if svc == nil {
				t.Errorf("no Service %s", name)
				continue
			}
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			if len(ports) != 1 || ports[0].(map[string]any)["port"] != port {
				t.Errorf("Service %s ports %v, want %d", name, ports, port)
			}
		}
	})
	t.Run("PostgreSQL: a StatefulSet of 3 replicas, the DSN and password from a Secret", func(t *testing.T) {
		objs, _, err := renderChart(c, "flotilla-hub", parseValues(t, valueSets[1].values))
		if err != nil {
			t.Fatal(err)
		}
		s := find(objs, "StatefulSet", "flotilla-hub")
		if n, _, _ := unstructured.NestedInt64(s.Object, "spec", "replicas"); n != 3 {
			t.Errorf("replicas = %d, want 3", n)
		}
		args := argsOf(t, s)
		for _, want := range []string{"--store=$(FLOTILLA_STORE)", "--replica-id=$(POD_NAME)", "--fleet-path=clusters/prod", "--host=hub.example.com",
			"--credentials-config=/etc/flotilla/credentials/credentials.yaml",
			"--webhook-secret-file=github=/etc/flotilla/webhooks/github/secret", "--webhook-secret-file=gitlab=/etc/flotilla/webhooks/gitlab/secret"} {
			if !slices.Contains(args, want) {
				t.Errorf("hub args %q lack %s", args, want)
			}
		}
		env, _, _ := unstructured.NestedSlice(containerOf(t, s), "env")
		fromSecret := map[string]string{}
		for _, e := range env {
			e := e.(map[string]any)
			if ref, ok, _ := unstructured.NestedStringMap(e, "valueFrom", "secretKeyRef"); ok {
				fromSecret[e["name"].(string)] = ref["name"] + "/" + ref["key"]
			}
		}
		if want := map[string]string{"FLOTILLA_STORE": "flotilla-hub-store/dsn", "PGPASSWORD": "flotilla-hub-store/password"}; !equalMaps(fromSecret, want) {
			t.Errorf("env from Secrets = %v, want %v", fromSecret, want)
		}
		if find(objs, "PodDisruptionBudget", "flotilla-hub") == nil {
			t.Error("no PodDisruptionBudget for 3 replicas")
		}
		if typ, _, _ := unstructured.NestedString(find(objs, "Service", "flotilla-hub").Object, "spec", "type"); typ != "LoadBalancer" {
			t.Errorf("agents Service type %q, want LoadBalancer", typ)
		}
	})
	t.Run("a hostile fleet URL stays one argument", func(t *testing.T) {
		vals := parseValues(t, `hub: {fleet: {url: "https://x.example/f.git\n            - --allow-file-sources=/"}}`)
		objs, _, err := renderChart(c, "flotilla-system", vals)
		if err != nil {
			t.Fatal(err)
		}
		args := argsOf(t, find(objs, "Deployment", "flotilla-hub"))
		if slices.Contains(args, "--allow-file-sources=/") {
			t.Errorf("a value injected an argument: %q", args)
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The agent's join token reaches it as a file from its Secret: never an argument (process
// listings show those) nor an environment variable.
func TestChartAgentTokenOnlyFromSecretFile(t *testing.T) {
	t.Parallel()
	objs, _, err := renderChart(loadChart(t), "flotilla-system", parseValues(t, valueSets[2].values))
	if err != nil {
		t.Fatal(err)
	}
	d := find(objs, "Deployment", "flotilla-agent")
	args := argsOf(t, d)
	for _, want := range []string{"--hub=https://hub.example.com:8443,https://hub-1.example.com:8443", "--join-token-file=/etc/flotilla/join/token", "--state-dir=/state"} {
		if !slices.Contains(args, want) {
			t.Errorf("agent args %q lack %s", args, want)
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--join-token=") || strings.Contains(a, "$(") {
			t.Errorf("agent arg %q carries the token on the command line", a)
		}
	}
	if env, found, _ := unstructured.NestedSlice(containerOf(t, d), "env"); found {
		t.Errorf("agent has environment variables %v; the token must come as a file only", env)
	}
	volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	var secretVolumes []string
	for _, v := range volumes {
		if name, ok, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName"); ok {
			secretVolumes = append(secretVolumes, name)
		}
	}
	if !slices.Equal(secretVolumes, []string{"flotilla-agent-join"}) {
		t.Errorf("secret volumes %v, want [flotilla-agent-join]", secretVolumes)
	}
	if b := find(objs, "ClusterRoleBinding", "flotilla-agent-platform-admin"); b == nil {
		t.Error("agent.platformAdmin: true renders no platform-admin binding")
	}
	// Off by default.
	objs, _, err = renderChart(loadChart(t), "flotilla-system", parseValues(t, "hub: {enabled: false}\nagent: {enabled: true, hubURL: 'https://hub.example.com:8443'}"))
	if err != nil {
		t.Fatal(err)
	}
	if find(objs, "ClusterRoleBinding", "flotilla-agent-platform-admin") != nil {
		t.Error("the platform-admin binding is rendered without agent.platformAdmin")
	}
}

// The chart's agent has exactly deploy/agent's rights: the same rules, and the platform
// binding to the same ClusterRole as platform-admin.yaml.
func TestChartAgentRBACMatchesDeployAgent(t *testing.T) {
	t.Parallel()
	objs, _, err := renderChart(loadChart(t), "flotilla-system", parseValues(t, valueSets[2].values))
	if err != nil {
		t.Fatal(err)
	}
	kustomized, err := render.Render(t.Context(), render.Options{Root: "../../deploy", Path: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	compareRBAC(t, objs, kustomized)
	data, err := os.ReadFile("../../deploy/agent/platform-admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := clustertest.Objects(t, string(data))[0]
	got := find(objs, "ClusterRoleBinding", "flotilla-agent-platform-admin")
	if got == nil {
		t.Fatal("no platform-admin binding")
	}
	for _, field := range []string{"roleRef", "subjects"} {
		if g, w := got.Object[field], want.Object[field]; !reflect.DeepEqual(g, w) {
			t.Errorf("platform-admin %s = %v, want platform-admin.yaml's %v", field, g, w)
		}
	}
}

// compareRBAC wants the rules of every Role and ClusterRole in got equal to those of the
// object of the same kind and name in want.
func compareRBAC(t *testing.T, got, want []*unstructured.Unstructured) {
	t.Helper()
	n := 0
	for _, w := range want {
		if w.GetKind() != "Role" && w.GetKind() != "ClusterRole" {
			continue
		}
		g := find(got, w.GetKind(), w.GetName())
		if g == nil {
			t.Errorf("no %s %s", w.GetKind(), w.GetName())
			continue
		}
		n++
		gr, _, _ := unstructured.NestedSlice(g.Object, "rules")
		wr, _, _ := unstructured.NestedSlice(w.Object, "rules")
		gy, _ := yaml.Marshal(gr)
		wy, _ := yaml.Marshal(wr)
		if !bytes.Equal(gy, wy) {
			t.Errorf("%s %s rules:\n%s\nwant deploy/agent's:\n%s", w.GetKind(), w.GetName(), gy, wy)
		}
	}
	if n != 2 {
		t.Errorf("compared %d roles, want deploy/agent's 2", n)
	}
}

func TestChartRefusals(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	for _, tc := range []struct {
		name, namespace, values, want string
	}{
		{"several SQLite replicas", "flotilla-system", `hub: {replicas: 3, fleet: {url: "https://g.example/f.git"}}`,
			"hub.replicas is 3 with hub.store.type sqlite: SQLite has one writer, so the hub runs one replica; set hub.store.type postgres"},
		{"PostgreSQL without its Secret", "flotilla-system", `hub: {store: {type: postgres}, fleet: {url: "https://g.example/f.git"}}`,
			"hub.store.type postgres needs hub.store.postgres.secretName"},
		{"a hub without a fleet", "flotilla-system", `{}`, "hub.fleet.url is required"},
		{"nothing to install", "flotilla-system", `hub: {enabled: false}`, "neither hub.enabled nor agent.enabled is true"},
		{"an agent without a hub URL", "flotilla-system", `hub: {enabled: false}
agent: {enabled: true}`, "agent.hubURL is required"},
		{"an agent outside flotilla-system", "agents", `hub: {enabled: false}
agent: {enabled: true, hubURL: "https://hub.example.com:8443"}`, "the agent keeps its inventories in namespace flotilla-system and must be installed there, not in agents"},
		{"a plain-HTTP hub URL", "flotilla-system", `hub: {enabled: false}
agent: {enabled: true, hubURL: "http://hub.example.com:8443"}`, "at '/agent/hubURL'"},
		{"a webhook provider twice", "flotilla-system", `hub:
  fleet: {url: "https://g.example/f.git"}
  webhooks: [{provider: github, secretName: a, key: k}, {provider: github, secretName: b, key: k}]`, "hub.webhooks names provider github twice"},
		{"an unknown webhook provider", "flotilla-system", `hub:
  fleet: {url: "https://g.example/f.git"}
  webhooks: [{provider: bitbucket, secretName: a, key: k}]`, "provider"},
		{"a misspelt value", "flotilla-system", `hub: {replica: 3, fleet: {url: "https://g.example/f.git"}}`, "replica"},
		{"an unknown store", "flotilla-system", `hub: {store: {type: mysql}, fleet: {url: "https://g.example/f.git"}}`, "at '/hub/store/type': value must be one of 'sqlite', 'postgres'"},
		{"an image with a line break", "flotilla-system", `image: {repository: "ghcr.io/x\n        command: [sh]"}
hub: {fleet: {url: "https://g.example/f.git"}}`, "at '/image/repository'"},
		{"a join token given as a value", "flotilla-system", `hub: {enabled: false}
agent: {enabled: true, hubURL: "https://hub.example.com:8443", joinToken: {value: flt1.x}}`, "value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := renderChart(c, tc.namespace, parseValues(t, tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// Every object of every value set is accepted by a real API server (server-side dry-run).
func TestChartServerSideDryRun(t *testing.T) {
	t.Parallel()
	cl := clustertest.Start(t, localcluster.Options{Name: "chart"})
	a, err := install.NewApplier(cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := loadChart(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			ns := clustertest.Objects(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+vs.namespace+"}\n")
			if _, err := a.Apply(t.Context(), ns, install.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			objs, _, err := renderChart(c, vs.namespace, parseValues(t, vs.values))
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Apply(t.Context(), objs, install.ApplyOptions{DryRun: true, FieldManager: "helm"})
			if err != nil {
				t.Fatalf("server-side dry-run: %v", err)
			}
			if len(res) != len(objs) {
				t.Fatalf("%d results for %d objects", len(res), len(objs))
			}
			for _, r := range res {
				if r.Action != install.Created {
					t.Errorf("%s: %s, want created (a dry-run stores nothing)", r.Ref, r.Action)
				}
			}
		})
	}
}

// TestChartAgentImage: the agent's image follows a mirror of the hub's (REGISTRY/flotilla
// gives REGISTRY/flotilla-agent), and an agent kept on the CLI's image (agents installed
// before flotilla-agent) runs `flotilla agent`.
func TestChartAgentImage(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	for _, tt := range []struct {
		name, values, image string
		agentVerb           bool
	}{
		{"a mirror", `image: {repository: registry.example.com/platform/flotilla}`, "registry.example.com/platform/flotilla-agent:v0.1.0", false},
		{"the CLI's image", `agent: {image: {repository: ghcr.io/flotilla/flotilla}}`, "ghcr.io/flotilla/flotilla:v0.1.0", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vals := parseValues(t, "hub: {enabled: false}\nagent: {enabled: true, hubURL: \"https://hub.example.com:8443\"}\n")
			for k, v := range parseValues(t, tt.values) {
				if m, ok := v.(map[string]any); ok && vals[k] != nil {
					for kk, vv := range m {
						vals[k].(map[string]any)[kk] = vv
					}
					continue
				}
				vals[k] = v
			}
			objs, _, err := renderChart(c, "flotilla-system", vals)
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, o := range objs {
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				for _, ci := range containers {
					ct := ci.(map[string]any)
					if ct["name"] != "agent" {
						continue
					}
					found = true
					args, _, _ := unstructured.NestedStringSlice(ct, "args")
					if ct["image"] != tt.image || (len(args) > 0 && args[0] == "agent") != tt.agentVerb {
						t.Errorf("image %v, args %q; want %s, the agent verb %v", ct["image"], args, tt.image, tt.agentVerb)
					}
				}
			}
			if !found {
				t.Fatal("no agent container")
			}
		})
	}
}
