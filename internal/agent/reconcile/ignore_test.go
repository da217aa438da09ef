package reconcile

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPointers(t *testing.T) {
	t.Parallel()
	doc := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"example.com/ca": "x", "a~b": "tilde", "~1": "literal"}},
		"spec": map[string]any{
			"replicas":   int64(3),
			"containers": []any{map[string]any{"name": "web", "image": "nginx"}, map[string]any{"name": "log", "image": "fluent"}},
		},
	}
	cases := []struct {
		pointer string
		err     string // a part of the error, when the pointer is refused
		tokens  pointer
		value   any // the value get finds in doc; nil: none
	}{
		{pointer: "/spec/replicas", tokens: pointer{"spec", "replicas"}, value: int64(3)},
		{pointer: "/metadata/annotations/example.com~1ca", tokens: pointer{"metadata", "annotations", "example.com/ca"}, value: "x"},
		{pointer: "/metadata/annotations/a~0b", tokens: pointer{"metadata", "annotations", "a~b"}, value: "tilde"},
		{pointer: "/metadata/annotations/~01", tokens: pointer{"metadata", "annotations", "~1"}, value: "literal"},
		{pointer: "/spec/containers/1/image", tokens: pointer{"spec", "containers", "1", "image"}, value: "fluent"},
		{pointer: "/spec/containers/2/image", tokens: pointer{"spec", "containers", "2", "image"}},
		{pointer: "/spec/containers/01/image", tokens: pointer{"spec", "containers", "01", "image"}},
		{pointer: "/spec/containers/-/image", tokens: pointer{"spec", "containers", "-", "image"}},
		{pointer: "/spec/replicas/x", tokens: pointer{"spec", "replicas", "x"}},
		{pointer: "/spec/absent", tokens: pointer{"spec", "absent"}},
		{pointer: "/metadata/annotations/", tokens: pointer{"metadata", "annotations", ""}},
		{pointer: "", err: "names no field"},
		{pointer: "/", err: "names no field"},
		{pointer: "spec/replicas", err: `must start with "/"`},
		{pointer: "/spec/a~2", err: `"~" must be followed by 0 or 1`},
		{pointer: "/spec/a~", err: `"~" must be followed by 0 or 1`},
		{pointer: "/" + strings.Repeat("a", maxPointerBytes), err: "bytes long"},
		{pointer: strings.Repeat("/a", maxPointerTokens+1), err: "parts"},
	}
	for _, tc := range cases {
		t.Run(tc.pointer, func(t *testing.T) {
			p, err := parsePointer(tc.pointer)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parsePointer(%q) = %v, %v; want an error with %q", tc.pointer, p, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.tokens, p); d != "" {
				t.Errorf("tokens (-want +got):\n%s", d)
			}
			if s := p.String(); s != tc.pointer {
				t.Errorf("String() = %q, want %q back", s, tc.pointer)
			}
			v, ok := get(doc, p)
			if (tc.value != nil) != ok || (ok && !sameValue(v, tc.value)) {
				t.Errorf("get = %v, %v; want %v", v, ok, tc.value)
			}
		})
	}
}

func TestDriftPointer(t *testing.T) {
	t.Parallel()
	cases := []struct{ path, want, err string }{
		{path: ".spec.replicas", want: "/spec/replicas"},
		{path: ".spec.template.spec.containers[0].image", want: "/spec/template/spec/containers/0/image"},
		{path: `.metadata.annotations["example.com/ca"]`, want: "/metadata/annotations/example.com~1ca"},
		{path: `.metadata.labels["a b"].x`, want: "/metadata/labels/a b/x"},
		{path: `.data["we\"ird~"]`, want: `/data/we"ird~0`},
		{path: ".webhooks[10].clientConfig.caBundle", want: "/webhooks/10/clientConfig/caBundle"},
		{path: DeletedPath, err: "names no field"},
		{path: "", err: "names no field"},
		{path: "spec", err: "unexpected"},
		{path: ".spec..x", err: "empty key"},
		{path: ".list[x]", err: "not a list index"},
		{path: ".list[1", err: "no ]"},
		{path: `.m["k"`, err: "no ]"},
		{path: `.m["k]`, err: "bad quoted key"},
	}
	for _, tc := range cases {
		got, err := DriftPointer(tc.path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("DriftPointer(%q) = %q, %v; want an error with %q", tc.path, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("DriftPointer(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
		// What the report shows and what the rule takes name the same field.
		if p, err := parsePointer(got); err != nil {
			t.Errorf("DriftPointer(%q) = %q, which parsePointer refuses: %v", tc.path, got, err)
		} else if back, _ := pathPointer(tc.path); !cmp.Equal(p, back) {
			t.Errorf("round trip of %q: %v, want %v", tc.path, p, back)
		}
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"kube-controller-manager", "kube-controller-manager", true},
		{"kube-controller-manager", "kube-controller", false},
		{"*-operator", "prometheus-operator", true},
		{"*-operator", "operator", false},
		{"*-operator", "prometheus-operator-x", false},
		{"cert-manager*", "cert-manager-cainjector", true},
		{"*", "anything/with/slashes", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*a*a*a*a*b", strings.Repeat("a", 200), false},
		{"", "", true},
		{"", "x", false},
	}
	for _, tc := range cases {
		if got := glob(tc.pattern, tc.name); got != tc.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestIgnoreRulesRefused(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("ignore-refused")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true,
		Ignore: []IgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas"}}, {Paths: []string{"/data/a~2"}}}}
	res, err := r.Reconcile(t.Context(), parse(t, ns, webSet), opts)
	want := `ignore rule 2: path "/data/a~2" is not a JSON pointer: "~" must be followed by 0 or 1`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nothing applied") {
		t.Fatalf("reconcile: %v; want an error with %q", err, want)
	}
	if res.Requests.Writes != 0 {
		t.Errorf("%d writes for a refused rule, want none", res.Requests.Writes)
	}
	opts.Ignore = []IgnoreRule{{Paths: make([]string, maxIgnorePaths+1)}}
	if _, err := r.Reconcile(t.Context(), parse(t, ns, webSet), opts); err == nil || !strings.Contains(err.Error(), "more than 1000 paths") {
		t.Errorf("reconcile with %d paths: %v, want refused", maxIgnorePaths+1, err)
	}
	opts.Ignore = nil
	for _, respect := range [][]string{{""}, {strings.Repeat("m", maxManagerName+1)}} {
		if _, err := r.Reconcile(t.Context(), parse(t, ns, webSet), Options{Name: ns, Namespace: ns, RespectManagers: respect}); err == nil ||
			!strings.Contains(err.Error(), "respectManagers entry 1 is") {
			t.Errorf("reconcile with respectManagers %q: %v, want refused", respect, err)
		}
	}
	if _, err := r.Reconcile(t.Context(), parse(t, ns, webSet), Options{Name: ns, Namespace: ns, RespectManagers: make([]string, maxRespectManagers+1)}); err == nil ||
		!strings.Contains(err.Error(), "more than 100") {
		t.Errorf("reconcile with %d respectManagers: %v, want refused", maxRespectManagers+1, err)
	}
}

// hpaScale is what the HorizontalPodAutoscaler controller does: it writes the replicas of the
// Deployment through the scale subresource, as field manager kube-controller-manager.
func hpaScale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	deps := clientset(t).AppsV1().Deployments(ns)
	sc, err := deps.GetScale(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = replicas
	if _, err := deps.UpdateScale(t.Context(), name, &autoscalingv1.Scale{ObjectMeta: sc.ObjectMeta, Spec: sc.Spec},
		metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
}

func resourceVersion(t *testing.T, ns, object string) string {
	t.Helper()
	return jsonPath(object, "{.metadata.resourceVersion}")(t, ns)
}

// keptOver reconciles n times and checks that each finds nothing to do: no write, the object
// unchanged, its resourceVersion and the live value as they were. It returns the dry-runs
// the reconciles sent.
func keptOver(t *testing.T, r *Reconciler, n int, ns, set string, opts Options, object, path, want string) (dryRuns int64) {
	t.Helper()
	rv := resourceVersion(t, ns, object)
	for i := range n {
		res := mustReconcile(t, r, parse(t, ns, set), opts)
		if res.Requests.Writes != 0 || res.Count(Unchanged) != len(res.Objects) {
			t.Fatalf("reconcile %d: %v with %d writes, want all unchanged and no write\n%s", i+1, actions(res), res.Requests.Writes, res)
		}
		dryRuns += res.Requests.DryRuns
		if v := jsonPath(object, path)(t, ns); v != want {
			t.Fatalf("reconcile %d: %s %s = %q, want %q kept", i+1, object, path, v, want)
		}
		if got := resourceVersion(t, ns, object); got != rv {
			t.Fatalf("reconcile %d: %s resourceVersion %s, was %s: something wrote it", i+1, object, got, rv)
		}
	}
	return dryRuns
}

// An HPA owns the replicas of its Deployment: Flotilla must not scale it back, and must not
// write at all, however often it reconciles.
func TestHPAScaleIsLeftAlone(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	cases := []struct {
		name   string
		ignore []IgnoreRule
	}{
		{name: "scale subresource respected by default"},
		{name: "with an ignore rule for /spec/replicas", ignore: []IgnoreRule{{Group: "apps", Kind: "Deployment", Name: "web", Paths: []string{"/spec/replicas"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := uniqueName("hpa")
			opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, SelfHeal: true, Ignore: tc.ignore}
			mustReconcile(t, r, parse(t, ns, webSet), opts)
			hpaScale(t, ns, "web", 5)
			// Decided without a dry-run, like any unchanged object (the package's fast path).
			if n := keptOver(t, r, 5, ns, webSet, opts, "deployment/web", "{.spec.replicas}", "5"); n != 0 {
				t.Errorf("%d dry-runs over 5 reconciles, want none", n)
			}

			// The HPA goes on scaling; Flotilla goes on leaving it alone.
			hpaScale(t, ns, "web", 3)
			keptOver(t, r, 1, ns, webSet, opts, "deployment/web", "{.spec.replicas}", "3")

			// A new revision changes the image: it lands, the HPA's count stays.
			v2 := strings.Replace(webSet, "nginx:1.27", "nginx:1.28", 1)
			res := mustReconcile(t, r, parse(t, ns, v2), opts)
			if got := res.Find("Deployment", ns, "web"); got == nil || got.Action != Configured {
				t.Fatalf("web after a new image: %+v, want configured\n%s", got, res)
			}
			if v := jsonPath("deployment/web", "{.spec.replicas}/{.spec.template.spec.containers[0].image}")(t, ns); v != "3/nginx:1.28" {
				t.Errorf("replicas/image after the new revision = %q, want 3/nginx:1.28", v)
			}
			keptOver(t, r, 2, ns, v2, opts, "deployment/web", "{.spec.replicas}", "3")
		})
	}
}

// `kubectl scale` writes through the scale subresource too, so its count is kept like an
// HPA's.
func TestKubectlScaleIsLeftAlone(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("kscale")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, SelfHeal: true}
	mustReconcile(t, r, parse(t, ns, webSet), opts)
	kubectl("scale", "deployment/web", "--replicas=4")(t, ns)
	keptOver(t, r, 2, ns, webSet, opts, "deployment/web", "{.spec.replicas}", "4")
}

// Ignore rules on fields another client changed with an ordinary update (kubectl edit, a
// controller's Update), matched by target, with escaped keys and list indexes.
func TestIgnoreRules(t *testing.T) {
	t.Parallel()
	const set = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {"example.com/ca-bundle": "from-git"}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: production, level: info}
`
	edit := func(object, patch string) func(t *testing.T, ns string) {
		return kubectl("patch", object, "--type=merge", "-p="+patch)
	}
	cases := []struct {
		name    string
		ignore  []IgnoreRule
		change  func(t *testing.T, ns string)
		object  string // kubectl form, to read back
		path    string // jsonpath of the changed field
		changed string // its value after the change
		kept    bool   // whether the rule keeps it (else: healed back)
		healed  string // the value when healed
	}{
		{name: "data key edited by another client", ignore: []IgnoreRule{{Kind: "ConfigMap", Name: "settings", Paths: []string{"/data/mode"}}},
			change: edit("configmap/settings", `{"data":{"mode":"debug"}}`), object: "configmap/settings", path: "{.data.mode}", changed: "debug", kept: true},
		{name: "a rule for another object does not apply", ignore: []IgnoreRule{{Kind: "ConfigMap", Name: "other", Paths: []string{"/data/mode"}}},
			change: edit("configmap/settings", `{"data":{"mode":"debug"}}`), object: "configmap/settings", path: "{.data.mode}", changed: "debug", healed: "production"},
		{name: "a rule for another group does not apply", ignore: []IgnoreRule{{Group: "apps", Paths: []string{"/data/mode"}}},
			change: edit("configmap/settings", `{"data":{"mode":"debug"}}`), object: "configmap/settings", path: "{.data.mode}", changed: "debug", healed: "production"},
		{name: "other fields of the object are still healed", ignore: []IgnoreRule{{Kind: "ConfigMap", Paths: []string{"/data/mode"}}},
			change: edit("configmap/settings", `{"data":{"level":"debug"}}`), object: "configmap/settings", path: "{.data.level}", changed: "debug", healed: "info"},
		{name: "annotation key with a slash (~1)", ignore: []IgnoreRule{{Kind: "Deployment", Paths: []string{"/metadata/annotations/example.com~1ca-bundle"}}},
			change: edit("deployment/web", `{"metadata":{"annotations":{"example.com/ca-bundle":"injected"}}}`), object: "deployment/web",
			path: `{.metadata.annotations.example\.com/ca-bundle}`, changed: "injected", kept: true},
		{name: "list index", ignore: []IgnoreRule{{Namespace: "", Paths: []string{"/spec/template/spec/containers/0/image"}}},
			change: kubectl("set", "image", "deployment/web", "web=nginx:1.29"), object: "deployment/web",
			path: "{.spec.template.spec.containers[0].image}", changed: "nginx:1.29", kept: true},
		{name: "path absent live is left as desired", ignore: []IgnoreRule{{Paths: []string{"/data/absent", "/spec/nothing/0"}}},
			change: edit("configmap/settings", `{"data":{"mode":"debug"}}`), object: "configmap/settings", path: "{.data.mode}", changed: "debug", healed: "production"},
	}
	r := newTestReconciler(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := uniqueName("ignore")
			opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, SelfHeal: true, Ignore: tc.ignore}
			mustReconcile(t, r, parse(t, ns, set), opts)
			tc.change(t, ns)
			if v := jsonPath(tc.object, tc.path)(t, ns); v != tc.changed {
				t.Fatalf("the change did not happen: %s %s = %q", tc.object, tc.path, v)
			}
			if tc.kept {
				keptOver(t, r, 3, ns, set, opts, tc.object, tc.path, tc.changed)
				return
			}
			res := mustReconcile(t, r, parse(t, ns, set), opts)
			if v := jsonPath(tc.object, tc.path)(t, ns); v != tc.healed {
				t.Errorf("%s %s = %q after reconcile, want %q healed\n%s", tc.object, tc.path, v, tc.healed, res)
			}
		})
	}
}

// An ignored field is set when the object is created, and kept at its live value when the
// release changes it later, even while flotilla is still its only owner: never removed (a
// Deployment without replicas falls back to 1) and never taken back.
func TestIgnoredFieldSetOnCreate(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("ignore-create")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, SelfHeal: true,
		Ignore: []IgnoreRule{{Group: "apps", Kind: "Deployment", Namespace: ns, Paths: []string{"/spec/replicas"}}}}
	mustReconcile(t, r, parse(t, ns, webSet), opts)
	if v := jsonPath("deployment/web", "{.spec.replicas}")(t, ns); v != "2" {
		t.Fatalf("created with replicas %q, want the desired 2", v)
	}
	keptOver(t, r, 2, ns, webSet, opts, "deployment/web", "{.spec.replicas}", "2")

	v2 := strings.Replace(strings.Replace(webSet, "replicas: 2", "replicas: 6", 1), "tier: frontend", "tier: edge", 1)
	res := mustReconcile(t, r, parse(t, ns, v2), opts)
	if got := res.Find("Deployment", ns, "web"); got == nil || got.Action != Configured {
		t.Fatalf("web: %+v, want configured\n%s", got, res)
	}
	if v := jsonPath("deployment/web", "{.spec.replicas}/{.metadata.labels.tier}")(t, ns); v != "2/edge" {
		t.Errorf("replicas/tier = %q, want 2/edge: the ignored field kept, the rest applied", v)
	}
	keptOver(t, r, 2, ns, v2, opts, "deployment/web", "{.spec.replicas}", "2")

	// Deleted and created again, it gets the desired value again.
	kubectl("delete", "deployment/web")(t, ns)
	mustReconcile(t, r, parse(t, ns, v2), opts)
	if v := jsonPath("deployment/web", "{.spec.replicas}")(t, ns); v != "6" {
		t.Errorf("re-created with replicas %q, want the desired 6", v)
	}
}

// Fields of a respected manager (a glob) are left alone; without the glob they are drift that
// names the manager.
func TestRespectManagers(t *testing.T) {
	t.Parallel()
	// Flotilla keeps fields of its own (level): an object whose every field another manager
	// took costs one apply for flotilla to hold the object again (ownsByApply).
	const set = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: production, level: info}
`
	operatorEdit := func(t *testing.T, ns string) {
		t.Helper()
		cms := clientset(t).CoreV1().ConfigMaps(ns)
		cm, err := cms.Get(t.Context(), "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["mode"] = "tuned"
		if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "tuning-operator"}); err != nil {
			t.Fatal(err)
		}
	}
	r := newTestReconciler(t)
	for _, respect := range [][]string{{"*-operator"}, {"kube-controller-manager", "tuning-*"}} {
		t.Run(strings.Join(respect, ","), func(t *testing.T) {
			t.Parallel()
			ns := uniqueName("respect")
			opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, SelfHeal: true, RespectManagers: respect}
			mustReconcile(t, r, parse(t, ns, set), opts)
			operatorEdit(t, ns)
			keptOver(t, r, 3, ns, set, opts, "configmap/settings", "{.data.mode}", "tuned")
		})
	}
	t.Run("not respected: drift names the manager", func(t *testing.T) {
		t.Parallel()
		ns := uniqueName("respect")
		opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, RespectManagers: []string{"*-controller"}}
		mustReconcile(t, r, parse(t, ns, set), opts)
		operatorEdit(t, ns)
		res := mustReconcile(t, r, parse(t, ns, set), opts)
		got := res.Find("ConfigMap", ns, "settings")
		want := []FieldDrift{{Path: ".data.mode", Desired: `"production"`, Live: `"tuned"`, Manager: "tuning-operator"}}
		if got == nil || got.Action != Drifted {
			t.Fatalf("settings: %+v, want drifted\n%s", got, res)
		}
		if d := cmp.Diff(want, got.Drift); d != "" {
			t.Errorf("drift (-want +got):\n%s", d)
		}
	})
}

// The manager named for a drifted field is the one whose managedFields entry holds it, or
// holds the list around it as a whole; several sharing a value are all named.
func TestManagerOf(t *testing.T) {
	t.Parallel()
	live := &unstructured.Unstructured{}
	err := live.UnmarshalJSON([]byte(managedDeployment))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, want string }{
		{".spec.replicas", "kube-controller-manager"},
		{".spec.template.spec.containers[1].image", "kubectl-set"},
		{".spec.template.spec.containers[1].name", "flotilla"},
		{".spec.template.spec.containers[0].image", ""},
		{".spec.args[1]", "a"},
		{".spec.shared", "a, b"},
	}
	for _, tc := range cases {
		fields := []FieldDrift{{Path: tc.path, Live: `"v"`}}
		nameManagers(fields, live)
		if fields[0].Manager != tc.want {
			t.Errorf("manager of %s = %q, want %q", tc.path, fields[0].Manager, tc.want)
		}
	}
	paths, _ := leftAlone(refOf(live), live, nil, []string{"kubectl-*"})
	var got []string
	for _, p := range paths {
		got = append(got, p.live.String())
	}
	if d := cmp.Diff([]string{"/spec/template/spec/containers/1/image", "/spec/replicas"}, got); d != "" {
		t.Errorf("left alone (-want +got):\n%s", d)
	}
}

// A respected manager's values inside keyed list elements (a container's env) are found in
// the desired state by key, not by their position live: the operator put its own variable
// first and changed another, and flotilla keeps both without touching the rest.
func TestRespectedListElementsFoundByKey(t *testing.T) {
	t.Parallel()
	const set = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: "nginx:1.27"
          env: [{name: A, value: "1"}, {name: B, value: "2"}]
`
	r := newTestReconciler(t)
	ns := uniqueName("respect-keys")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, SelfHeal: true, RespectManagers: []string{"*-operator"}}
	mustReconcile(t, r, parse(t, ns, set), opts)

	deps := clientset(t).AppsV1().Deployments(ns)
	d, err := deps.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	c.Env = append([]corev1.EnvVar{{Name: "C", Value: "3"}}, c.Env...)
	c.Env[1].Value = "9" // A
	if _, err := deps.Update(t.Context(), d, metav1.UpdateOptions{FieldManager: "env-operator"}); err != nil {
		t.Fatal(err)
	}
	const env = "{range .spec.template.spec.containers[0].env[*]}{.name}={.value} {end}"
	if v := jsonPath("deployment/web", env)(t, ns); v != "C=3 A=9 B=2 " {
		t.Fatalf("env after the operator = %q", v)
	}
	keptOver(t, r, 3, ns, set, opts, "deployment/web", env, "C=3 A=9 B=2 ")
}

// BenchmarkLeaveAlone is the agent's added cost per existing object when a rule matches it:
// managedFields read and the kept fields taken from live.
func BenchmarkLeaveAlone(b *testing.B) {
	live := &unstructured.Unstructured{}
	if err := live.UnmarshalJSON([]byte(managedDeployment)); err != nil {
		b.Fatal(err)
	}
	desired := live.DeepCopy()
	desired.SetManagedFields(nil)
	rules, err := parseIgnoreRules([]IgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas", "/spec/template/spec/containers/1/image"}}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		it := &item{ref: refOf(live), live: live, desired: desired.DeepCopy()}
		leaveAlone([]*item{it}, rules, []string{"*-operator"})
	}
}

// managedDeployment is a Deployment with the managedFields of flotilla, kubectl set image, an
// HPA (the scale subresource) and two managers sharing a field.
const managedDeployment = `{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": {"name": "web", "managedFields": [
			{"manager": "flotilla", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
				"fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}}}}}}}},
			{"manager": "kubectl-set", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
				"fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {"f:image": {}}}}}}}},
			{"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
				"fieldsV1": {"f:spec": {"f:replicas": {}}}},
			{"manager": "a", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
				"fieldsV1": {"f:spec": {"f:args": {}, "f:shared": {}}}},
			{"manager": "b", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
				"fieldsV1": {"f:spec": {"f:shared": {}}}}
		]},
		"spec": {"replicas": 5, "shared": "x", "args": ["-v", "-q"],
			"template": {"spec": {"containers": [{"name": "sidecar", "image": "envoy"}, {"name": "web", "image": "nginx:1.29"}]}}}}`
