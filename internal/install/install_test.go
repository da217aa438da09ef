package install

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
	"github.com/flotilla/flotilla/internal/pki"
	"github.com/flotilla/flotilla/internal/render"
)

func testToken(t *testing.T) string {
	t.Helper()
	tok, err := pki.NewJoinToken("edge-1", strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	return tok.Encode()
}

func TestManifestsRefuse(t *testing.T) {
	t.Parallel()
	tok := testToken(t)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no hub", Options{JoinToken: tok}, "--hub is required"},
		{"plain HTTP hub", Options{HubURLs: []string{"http://hub:8443"}, JoinToken: tok}, `--hub "http://hub:8443": want the hub's agent endpoint as https://HOST:PORT`},
		{"hub URL with credentials", Options{HubURLs: []string{"https://u:p@hub:8443"}, JoinToken: tok}, "want the hub's agent endpoint as https://HOST:PORT"},
		{"too many hubs", Options{HubURLs: slices.Repeat([]string{"https://hub:8443"}, 17), JoinToken: tok}, "--hub: 17 URLs, at most 16"},
		{"no token", Options{HubURLs: []string{"https://hub:8443"}}, "the join token: join token: not a flotilla token"},
		{"garbage token", Options{HubURLs: []string{"https://hub:8443"}, JoinToken: "flt1.a.b"}, "join token: truncated"},
		{"bad namespace", Options{Namespace: "Flotilla_System", HubURLs: []string{"https://hub:8443"}, JoinToken: tok}, `--namespace "Flotilla_System"`},
		{"bad state volume", Options{HubURLs: []string{"https://hub:8443"}, JoinToken: tok, StateVolume: "hostpath"}, `--state-volume "hostpath": want pvc or emptydir`},
		{"bad size", Options{HubURLs: []string{"https://hub:8443"}, JoinToken: tok, StateSize: "-1Gi"}, `--state-size "-1Gi"`},
		{"image with spaces", Options{HubURLs: []string{"https://hub:8443"}, JoinToken: tok, Image: "x y"}, `--image "x y": not an image reference`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Manifests(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// The token is in the Secret, and in nothing else: not the Deployment's args or env.
func TestManifestsTokenOnlyInSecret(t *testing.T) {
	t.Parallel()
	tok := testToken(t)
	objs, err := Manifests(Options{HubURLs: []string{"https://hub.example.com:8443"}, JoinToken: tok + "\n"})
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.SplitN(tok, ".", 5)[3]
	for _, o := range objs {
		data, _ := yaml.Marshal(o.Object)
		if o.GetKind() == "Secret" {
			var s corev1.Secret
			if err := yaml.Unmarshal(data, &s); err != nil {
				t.Fatal(err)
			}
			if got := string(s.Data[JoinSecretKey]); got != tok {
				t.Errorf("Secret holds %q, want the token trimmed", got)
			}
			continue
		}
		if strings.Contains(string(data), secret) {
			t.Errorf("%s %s holds the token:\n%s", o.GetKind(), o.GetName(), data)
		}
	}
	d := find(objs, "Deployment", Name)
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if !slices.Contains(args, "--join-token-file=/etc/flotilla/join/token") {
		t.Errorf("agent args %q do not read the token from the Secret's file", args)
	}
	// The root filesystem is read-only; /tmp must be a volume.
	mounts, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "volumeMounts")
	if !slices.ContainsFunc(mounts, func(m any) bool { return m.(map[string]any)["mountPath"] == "/tmp" }) {
		t.Errorf("agent mounts %v: no writable /tmp", mounts)
	}
}

// The install gives the agent exactly deploy/agent's rights (and platform-admin.yaml's with
// --platform-admin), so the two ways to install it cannot drift apart.
func TestManifestsRBACMatchesDeployAgent(t *testing.T) {
	t.Parallel()
	objs, err := Manifests(Options{HubURLs: []string{"https://hub:8443"}, JoinToken: testToken(t), PlatformAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := render.Render(t.Context(), render.Options{Root: "../../deploy", Path: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../deploy/agent/platform-admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, clustertest.Objects(t, string(data))...)
	n := 0
	for _, w := range want {
		switch w.GetKind() {
		case "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ServiceAccount":
		default:
			continue
		}
		n++
		g := find(objs, w.GetKind(), w.GetName())
		if g == nil {
			t.Errorf("no %s %s", w.GetKind(), w.GetName())
			continue
		}
		if g.GetNamespace() != w.GetNamespace() {
			t.Errorf("%s %s in namespace %q, deploy/agent's in %q", w.GetKind(), w.GetName(), g.GetNamespace(), w.GetNamespace())
		}
		for _, field := range []string{"rules", "roleRef", "subjects"} {
			if gv, wv := g.Object[field], w.Object[field]; !reflect.DeepEqual(gv, wv) {
				t.Errorf("%s %s %s = %v, deploy/agent's %v", w.GetKind(), w.GetName(), field, gv, wv)
			}
		}
	}
	if n != 6 {
		t.Errorf("compared %d RBAC objects, want 6", n)
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

// Against a real API server: the first install creates every object, a second changes
// nothing (no resource version moves), and an added option changes only its object.
func TestApplyIdempotent(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, localcluster.Options{Name: "install"})
	ctx := t.Context()
	a, err := NewApplier(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{HubURLs: []string{"https://hub.example.com:8443"}, JoinToken: testToken(t)}
	objs, err := Manifests(opts)
	if err != nil {
		t.Fatal(err)
	}

	// A server-side dry-run first: accepted, nothing stored.
	res, err := a.Apply(ctx, objs, ApplyOptions{DryRun: true})
	if err != nil {
		t.Fatalf("dry-run: %v", err)
	}
	wantActions(t, res, len(objs), Created)
	for _, r := range res {
		// Only the cluster-scoped objects can be checked before the namespace exists.
		if want := r.Namespace != ""; r.NotValidated != want {
			t.Errorf("dry-run %s: not validated = %v, want %v", r, r.NotValidated, want)
		}
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "flotilla-system", metav1.GetOptions{}); err == nil {
		t.Fatal("the dry-run created namespace flotilla-system")
	}

	res, err = a.Apply(ctx, objs, ApplyOptions{})
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	wantActions(t, res, len(objs), Created)
	versions := resourceVersions(t, cs)

	res, err = a.Apply(ctx, objs, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantActions(t, res, len(objs), Unchanged)
	if again := resourceVersions(t, cs); !reflect.DeepEqual(again, versions) {
		t.Errorf("a second install changed objects: resource versions %v, then %v", versions, again)
	}

	opts.PlatformAdmin = true
	objs, err = Manifests(opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err = a.Apply(ctx, objs, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		want := Unchanged
		if r.Ref == "clusterrolebinding.rbac.authorization.k8s.io/"+PlatformAdmin {
			want = Created
		}
		if r.Action != want {
			t.Errorf("%s: %s, want %s", r.Ref, r.Action, want)
		}
	}

	// A changed object is configured, and a server-side dry-run says so without storing it.
	objs, err = Manifests(Options{HubURLs: []string{"https://hub-2.example.com:8443"}, JoinToken: opts.JoinToken, PlatformAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err = a.Apply(ctx, objs, ApplyOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		want := Unchanged
		if r.Ref == "deployment.apps/"+Name {
			want = Configured
		}
		if r.Action != want {
			t.Errorf("dry-run of a new --hub: %s: %s, want %s", r.Ref, r.Action, want)
		}
	}
	d, err := cs.AppsV1().Deployments("flotilla-system").Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--hub=https://hub.example.com:8443") {
		t.Errorf("the dry-run changed the Deployment: args %q", args)
	}
}

func wantActions(t *testing.T, res []Result, n int, want Action) {
	t.Helper()
	if len(res) != n {
		t.Fatalf("%d results, want %d", len(res), n)
	}
	for _, r := range res {
		if r.Action != want {
			t.Errorf("%s: %s, want %s", r.Ref, r.Action, want)
		}
	}
}

func resourceVersions(t *testing.T, cs kubernetes.Interface) map[string]string {
	t.Helper()
	ctx := t.Context()
	rv := map[string]string{}
	add := func(what string, m metav1.Object, err error) {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		rv[what] = m.GetResourceVersion()
	}
	ns := "flotilla-system"
	o1, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	add("namespace", o1, err)
	o2, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, Name, metav1.GetOptions{})
	add("serviceaccount", o2, err)
	o3, err := cs.RbacV1().Roles(ns).Get(ctx, InventoriesRole, metav1.GetOptions{})
	add("role", o3, err)
	o4, err := cs.RbacV1().RoleBindings(ns).Get(ctx, InventoriesRole, metav1.GetOptions{})
	add("rolebinding", o4, err)
	o5, err := cs.RbacV1().ClusterRoles().Get(ctx, Name, metav1.GetOptions{})
	add("clusterrole", o5, err)
	o6, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, Name, metav1.GetOptions{})
	add("clusterrolebinding", o6, err)
	o7, err := cs.CoreV1().Secrets(ns).Get(ctx, JoinSecretName, metav1.GetOptions{})
	add("secret", o7, err)
	o8, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, StateClaimName, metav1.GetOptions{})
	add("pvc", o8, err)
	o9, err := cs.AppsV1().Deployments(ns).Get(ctx, Name, metav1.GetOptions{})
	add("deployment", o9, err)
	return rv
}

// A namespace of its own for the agent: its inventories' Role stays in flotilla-system, which
// the install creates too.
func TestManifestsOtherNamespace(t *testing.T) {
	t.Parallel()
	objs, err := Manifests(Options{Namespace: "edge-agent", HubURLs: []string{"https://hub:8443"}, JoinToken: testToken(t), StateVolume: StateEmptyDir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	want := []string{
		"Namespace /edge-agent", "Namespace /flotilla-system", "ServiceAccount edge-agent/flotilla-agent",
		"Role flotilla-system/flotilla-agent-inventories", "RoleBinding flotilla-system/flotilla-agent-inventories",
		"ClusterRole /flotilla-agent", "ClusterRoleBinding /flotilla-agent", "Secret edge-agent/flotilla-agent-join",
		"Deployment edge-agent/flotilla-agent",
	}
	if !slices.Equal(got, want) {
		t.Errorf("objects:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	subjects, _, _ := unstructured.NestedSlice(find(objs, "RoleBinding", InventoriesRole).Object, "subjects")
	if ns := subjects[0].(map[string]any)["namespace"]; ns != "edge-agent" {
		t.Errorf("inventories bound to a ServiceAccount in %v, want edge-agent", ns)
	}
	vol, _, _ := unstructured.NestedSlice(find(objs, "Deployment", Name).Object, "spec", "template", "spec", "volumes")
	if _, ok := vol[0].(map[string]any)["emptyDir"]; !ok {
		t.Errorf("state volume %v, want an emptyDir", vol[0])
	}
}

func TestDefaultImage(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{
		"v1.2.3":          "ghcr.io/flotilla/flotilla-agent:v1.2.3",
		"dev":             "ghcr.io/flotilla/flotilla-agent:" + DefaultImageTag,
		"v1.2.3-rc.1":     "ghcr.io/flotilla/flotilla-agent:" + DefaultImageTag,
		"v1.2":            "ghcr.io/flotilla/flotilla-agent:" + DefaultImageTag,
		"":                "ghcr.io/flotilla/flotilla-agent:" + DefaultImageTag,
		"v1.2.3/../evil:": "ghcr.io/flotilla/flotilla-agent:" + DefaultImageTag,
	} {
		if got := DefaultImage(v); got != want {
			t.Errorf("DefaultImage(%q) = %s, want %s", v, got, want)
		}
	}
}

// TestAgentVerb: the agent's own image runs the agent from its entrypoint; the CLI's image
// (what agents ran before flotilla-agent), or a mirror of it, needs the agent verb.
func TestAgentVerb(t *testing.T) {
	t.Parallel()
	for image, want := range map[string][]string{
		"ghcr.io/flotilla/flotilla-agent:v1.2.3":                                     nil,
		"registry.corp:5000/mirror/flotilla-agent@sha256:" + strings.Repeat("a", 64): nil,
		"ghcr.io/flotilla/flotilla:v0.1.0":                                           {"agent"},
		"registry.corp:5000/flotilla":                                                {"agent"},
		"flotilla:dev":                                                               {"agent"},
		"registry.corp:5000/flotilla-agent":                                          nil,
	} {
		if got := AgentVerb(image); !slices.Equal(got, want) {
			t.Errorf("AgentVerb(%s) = %q, want %q", image, got, want)
		}
	}
}
