package reconcile

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/project"
)

// jobRun is one Job the stand-in job controller saw: which, and what else existed then.
type jobRun struct {
	name string
	uid  types.UID
	// deployment: the Deployment "web" existed when the Job was first seen, with image.
	deployment bool
	image      string
}

// jobController plays the Kubernetes job controller in a namespace (the test cluster runs
// none): every new Job is recorded and then finished, Failed when fail says so.
type jobController struct {
	mu   sync.Mutex
	runs []jobRun
}

func (jc *jobController) seen() []jobRun {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return append([]jobRun(nil), jc.runs...)
}

func (jc *jobController) names() []string {
	var out []string
	for _, r := range jc.seen() {
		out = append(out, r.name)
	}
	return out
}

func playJobController(t *testing.T, ns string, fail func(name string) bool) *jobController {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	jc := &jobController{}
	done := make(chan struct{})
	cs := clientset(t)
	go func() {
		defer close(done)
		finished := map[types.UID]bool{}
		// A watch, as the job controller's informer: each Job is handled as it is created
		// or changed (a conflict on finishing it means a newer version, whose event follows).
		// A watch the server ends is opened again; its first events are the Jobs that exist.
		for ctx.Err() == nil {
			w, err := cs.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("job controller: watch jobs: %v", err)
				}
				return
			}
			for ev := range w.ResultChan() {
				j, ok := ev.Object.(*batchv1.Job)
				if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) || finished[j.UID] || j.DeletionTimestamp != nil {
					continue
				}
				run := jobRun{name: j.Name, uid: j.UID}
				if d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); err == nil {
					run.deployment, run.image = true, d.Spec.Template.Spec.Containers[0].Image
				}
				if finishJob(ctx, t, j, fail(j.Name)) {
					finished[j.UID] = true
					jc.mu.Lock()
					jc.runs = append(jc.runs, run)
					jc.mu.Unlock()
				}
			}
			w.Stop()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return jc
}

// finishJob writes the status the job controller would at the end of the Job's run.
func finishJob(ctx context.Context, t *testing.T, j *batchv1.Job, fail bool) bool {
	now := metav1.Now()
	j.Status.StartTime = &now
	if fail {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		}
	} else {
		j.Status.Succeeded = 1
		j.Status.CompletionTime = &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
		}
	}
	_, err := clientset(t).BatchV1().Jobs(j.Namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{})
	if err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		t.Errorf("job controller: finish job %s: %v", j.Name, err)
	}
	return err == nil
}

// chartSet is what a chart with hooks renders to: a ConfigMap the migration Job reads (a
// pre-install hook of lower weight), the Job (pre-install and pre-upgrade), the Deployment,
// and a post-install ConfigMap. {{image}} is the Deployment's image.
const chartSet = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: migrate-config
  annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: "-5"}
data: {target: v1}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {helm.sh/hook: "pre-install,pre-upgrade", helm.sh/hook-weight: "0"}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: migrate:1}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "{{image}}"}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: installed
  annotations: {helm.sh/hook: "post-install,post-upgrade"}
data: {image: "{{image}}"}
`

func chartObjects(image string) string {
	return strings.ReplaceAll(chartSet, "{{image}}", image)
}

// TestHooksRunAroundTheRelease: pre-install hooks run, in weight order and each to its end,
// before anything else of the release is applied; post-install ones after. Hooks are not
// inventoried, not compared and not re-run while the set stays the same (a drift check), and
// run again when it changes (an upgrade), the Job anew.
func TestHooksRunAroundTheRelease(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("hooks")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, Hooks: true, Prune: true, Timeout: time.Minute}
	jc := playJobController(t, ns, func(string) bool { return false })
	cs := clientset(t)

	res := mustReconcile(t, r, parse(t, ns, chartObjects("web:1")), opts)
	want := map[string]Action{"namespace/" + ns: Created, "deployment.apps/web": Created}
	if d := cmp.Diff(want, actions(res)); d != "" {
		t.Errorf("actions (-want +got): hooks are not release objects:\n%s", d)
	}
	runs := jc.seen()
	if len(runs) != 1 || runs[0].name != "migrate" || runs[0].deployment {
		t.Fatalf("job runs = %+v, want migrate once, before the Deployment existed", runs)
	}
	job, err := cs.BatchV1().Jobs(ns).Get(t.Context(), "migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Annotations[HookOfAnnotation] != ns {
		t.Errorf("job annotations = %v, want %s=%s", job.Annotations, HookOfAnnotation, ns)
	}
	for _, name := range []string{"migrate-config", "installed"} {
		if !configMapExists(t, ns, name) {
			t.Errorf("hook configmap/%s was not applied", name)
		}
	}
	inv := inventoryData(t, ns)
	for _, hookName := range []string{"migrate", "migrate-config", "installed"} {
		if strings.Contains(inv, `"n":"`+hookName+`"`) {
			t.Errorf("hook %s is in the inventory:\n%s", hookName, inv)
		}
	}

	t.Run("a drift check of the same set runs no hook", func(t *testing.T) {
		// The inventory's own writes (server-side apply) keep the record of the hooks.
		invs, err := r.loadInventories(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		own, _ := invs.of(ns)
		own.serviceAccount = &ServiceAccount{Namespace: ns, Name: "someone"}
		if err := r.saveInventory(t.Context(), own); err != nil {
			t.Fatal(err)
		}
		own.serviceAccount = nil
		if err := r.saveInventory(t.Context(), own); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), "installed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		res := mustReconcile(t, r, parse(t, ns, chartObjects("web:1")), opts)
		for _, o := range res.Objects {
			if o.Action != Unchanged {
				t.Errorf("%s: %s, want unchanged (a deleted hook is no drift)", o.ObjectRef, o.Action)
			}
		}
		if got := jc.names(); len(got) != 1 {
			t.Errorf("job runs = %v, want still one", got)
		}
		if configMapExists(t, ns, "installed") {
			t.Error("the post-install hook ran again on a drift check")
		}
	})

	t.Run("a changed set runs the upgrade hooks, the Job anew", func(t *testing.T) {
		mustReconcile(t, r, parse(t, ns, chartObjects("web:2")), opts)
		runs := jc.seen()
		// The Job saw the Deployment as it was before the upgrade: the hook ran first.
		if len(runs) != 2 || runs[1].name != "migrate" || runs[1].uid == runs[0].uid || runs[1].image != "web:1" {
			t.Fatalf("job runs = %+v, want migrate again as a new Job, while the Deployment still ran web:1", runs)
		}
		if v, _ := configMapValue(t, ns, "installed", "image"); v != "web:2" {
			t.Errorf("post-upgrade configmap image = %q, want web:2", v)
		}
		// migrate-config is a pre-install hook only: an upgrade leaves it as it was.
		if v, _ := configMapValue(t, ns, "migrate-config", "target"); v != "v1" {
			t.Errorf("pre-install-only hook changed on upgrade: %q", v)
		}
	})

	t.Run("a set without its hooks prunes none of them", func(t *testing.T) {
		withoutHooks := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "web:2"}]
`
		mustReconcile(t, r, parse(t, ns, withoutHooks), opts)
		if _, err := cs.BatchV1().Jobs(ns).Get(t.Context(), "migrate", metav1.GetOptions{}); err != nil {
			t.Errorf("hook job after its hook left the set: %v (hooks are never pruned)", err)
		}
	})
}

func configMapValue(t *testing.T, ns, name, key string) (string, bool) {
	t.Helper()
	cm, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return "", false
	}
	v, ok := cm.Data[key]
	return v, ok
}

// TestFailedHookFailsTheRelease: a pre-install Job that fails stops the release before the
// rest is applied, with the Job's reason; the next reconcile runs it again (nothing was
// recorded as done), still as an install: the release was never installed.
func TestFailedHookFailsTheRelease(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("hookfail")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, Hooks: true, Timeout: time.Minute}
	var mu sync.Mutex
	failing := true
	jc := playJobController(t, ns, func(string) bool { mu.Lock(); defer mu.Unlock(); return failing })
	set := strings.Replace(chartObjects("web:1"), `helm.sh/hook: "pre-install,pre-upgrade"`, `helm.sh/hook: pre-install`, 1)

	_, err := r.Reconcile(t.Context(), parse(t, ns, set), opts)
	wantErr := `pre-install hook job.batch/migrate in namespace "` + ns + `": failed: BackoffLimitExceeded: Job has reached the specified backoff limit`
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("error = %v, want it to contain %q", err, wantErr)
	}
	if _, err := clientset(t).AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deployment after a failed pre-install hook: %v, want not found", err)
	}
	if configMapExists(t, ns, "installed") {
		t.Error("the post-install hook ran after a failed pre-install hook")
	}

	mu.Lock()
	failing = false
	mu.Unlock()
	mustReconcile(t, r, parse(t, ns, set), opts)
	if runs := jc.seen(); len(runs) != 2 || runs[0].uid == runs[1].uid || runs[1].deployment {
		t.Errorf("job runs = %+v, want a second, new run before the Deployment", runs)
	}
}

// TestHookDeletePolicies: before-hook-creation (the default) keeps the finished hook until
// the next run; hook-succeeded deletes it after success; hook-failed after failure.
func TestHookDeletePolicies(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	for _, tc := range []struct {
		name, policy string
		fail         bool
		wantKept     bool
	}{
		{name: "default keeps a finished job", policy: "", wantKept: true},
		{name: "hook-succeeded deletes a finished job", policy: "hook-succeeded", wantKept: false},
		{name: "hook-succeeded keeps a failed job", policy: "hook-succeeded", fail: true, wantKept: true},
		{name: "hook-failed deletes a failed job", policy: "hook-failed", fail: true, wantKept: false},
		{name: "hook-failed keeps a finished job", policy: "before-hook-creation,hook-failed", wantKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := uniqueName("hookpolicy")
			playJobController(t, ns, func(string) bool { return tc.fail })
			set := chartObjects("web:1")
			if tc.policy != "" {
				set = strings.Replace(set, `helm.sh/hook-weight: "0"}`, `helm.sh/hook-weight: "0", helm.sh/hook-delete-policy: "`+tc.policy+`"}`, 1)
			}
			_, err := r.Reconcile(t.Context(), parse(t, ns, set), Options{Name: ns, Namespace: ns, CreateNamespace: true, Hooks: true, Timeout: time.Minute})
			if (err != nil) != tc.fail {
				t.Fatalf("error = %v, want failure %t", err, tc.fail)
			}
			_, gerr := clientset(t).BatchV1().Jobs(ns).Get(t.Context(), "migrate", metav1.GetOptions{})
			if kept := gerr == nil; kept != tc.wantKept {
				t.Errorf("job kept = %t (%v), want %t", kept, gerr, tc.wantKept)
			}
		})
	}
}

// TestHooksOnlyWithOptionAndForKnownEvents: delete, rollback, test and unknown hooks are never
// applied; without Options.Hooks (not a chart) the annotation means nothing.
func TestHooksOnlyWithOptionAndForKnownEvents(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	const set = `
apiVersion: v1
kind: ConfigMap
metadata: {name: on-delete, annotations: {helm.sh/hook: pre-delete}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: on-rollback, annotations: {helm.sh/hook: "post-rollback"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a-test, annotations: {helm.sh/hook: test}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unknown, annotations: {helm.sh/hook: "pre-install,on-a-whim"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: install-and-delete, annotations: {helm.sh/hook: "pre-install,post-delete"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: plain}
`
	for _, tc := range []struct {
		name    string
		hooks   bool
		applied []string
		absent  []string
		objects map[string]Action
	}{
		{
			name: "chart", hooks: true,
			applied: []string{"install-and-delete", "plain"},
			absent:  []string{"on-delete", "on-rollback", "a-test", "unknown"},
		},
		{
			name: "plain manifests", hooks: false,
			applied: []string{"on-delete", "on-rollback", "a-test", "unknown", "install-and-delete", "plain"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := uniqueName("hookevents")
			res := mustReconcile(t, r, parse(t, ns, set), Options{Name: ns, Namespace: ns, CreateNamespace: true, Hooks: tc.hooks})
			for _, n := range tc.applied {
				if !configMapExists(t, ns, n) {
					t.Errorf("configmap/%s not applied", n)
				}
			}
			for _, n := range tc.absent {
				if configMapExists(t, ns, n) {
					t.Errorf("configmap/%s applied", n)
				}
			}
			_, inResult := actions(res)["configmap/install-and-delete"]
			if inResult == tc.hooks {
				t.Errorf("install-and-delete among the release's objects = %t, want %t", inResult, !tc.hooks)
			}
		})
	}
}

// TestHookNeverReplacesAnotherObject: a hook named after an object that is not a hook of the
// release (made by hand, or another release's) fails the release and leaves the object alone,
// although before-hook-creation would delete a hook of its own.
func TestHookNeverReplacesAnotherObject(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("hooksteal")
	cs := clientset(t)
	mustReconcile(t, r, parse(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: theirs}\ndata: {owner: other}\n"),
		Options{Name: ns + "-other", Namespace: ns, CreateNamespace: true})
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "by-hand"}, Data: map[string]string{"owner": "a person"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, wantErr string }{
		{"theirs", `assignment "` + ns + `-other" holds this object; a hook never replaces it`},
		{"by-hand", `it exists and is not a hook of assignment "` + ns + `"; a hook never replaces another object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + tc.name + ", annotations: {helm.sh/hook: pre-install}}\ndata: {owner: hook}\n"
			_, err := r.Reconcile(t.Context(), parse(t, ns, set), Options{Name: ns, Namespace: ns, Hooks: true})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if v, _ := configMapValue(t, ns, tc.name, "owner"); v == "hook" {
				t.Errorf("configmap/%s was replaced by the hook", tc.name)
			}
		})
	}
}

// TestHooksObeyProjectBounds: a hook outside the project's namespaces fails the whole set
// before anything is written, as any object of it would.
func TestHooksObeyProjectBounds(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	a := newTeam(t, "hookteam", configMapRule(allConfigMapVerbs...))
	other := uniqueName("elsewhere")
	set := `
apiVersion: v1
kind: ConfigMap
metadata: {name: hook, namespace: ` + other + `, annotations: {helm.sh/hook: pre-install}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
`
	rules := &project.Rules{Name: a.rules.Name, Namespaces: a.rules.Namespaces,
		ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: a.ns, Name: "deployer"}}
	_, err := r.Reconcile(t.Context(), parse(t, a.ns, set), Options{Name: a.ns, Namespace: a.ns, Hooks: true, Project: rules})
	if !IsOutOfBounds(err) || !strings.Contains(err.Error(), `configmap/hook in namespace "`+other+`": namespace `+other+` is not one of project`) {
		t.Fatalf("error = %v, want a bounds error naming the hook", err)
	}
	if configMapExists(t, a.ns, "settings") {
		t.Error("settings applied although the set was out of bounds")
	}
	t.Run("a hook is read and applied as the project's ServiceAccount", func(t *testing.T) {
		// The team may write ConfigMaps, not Jobs: RBAC refuses the hook, and the rest waits.
		set := `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, annotations: {helm.sh/hook: pre-install}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: m}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
`
		_, err := r.Reconcile(t.Context(), parse(t, a.ns, set), Options{Name: a.ns, Namespace: a.ns, Hooks: true, Project: rules})
		want := `User "system:serviceaccount:` + a.ns + `:deployer" cannot get resource "jobs"`
		if err == nil || !strings.Contains(err.Error(), "pre-install hook job.batch/migrate") || !strings.Contains(err.Error(), want) {
			t.Fatalf("error = %v, want the hook refused by RBAC (%s)", err, want)
		}
		if configMapExists(t, a.ns, "settings") {
			t.Error("settings applied although its pre-install hook failed")
		}
	})
}

// TestResourcePolicyKeep: an object annotated helm.sh/resource-policy: keep is not pruned when
// it leaves the set, as with flotilla.dev/prune: disabled.
func TestResourcePolicyKeep(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("keep")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, Prune: true}
	mustReconcile(t, r, parse(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: kept, annotations: {helm.sh/resource-policy: keep}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: dropped}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: stays}
`), opts)
	res := mustReconcile(t, r, parse(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stays}\n"), opts)
	got := actions(res)
	if got["configmap/kept"] != PruneSkipped || got["configmap/dropped"] != Pruned {
		t.Errorf("actions = %v, want kept prune-skipped and dropped pruned", got)
	}
	if !configMapExists(t, ns, "kept") || configMapExists(t, ns, "dropped") {
		t.Errorf("kept exists %t, dropped exists %t; want true, false", configMapExists(t, ns, "kept"), configMapExists(t, ns, "dropped"))
	}
}

// TestObjectBecomingAHookIsNotPruned: an object of the release that a new chart version
// turns into a hook is replaced by the hook and then neither pruned nor inventoried.
func TestObjectBecomingAHookIsNotPruned(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("tohook")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, Prune: true, Hooks: true}
	mustReconcile(t, r, parse(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: setup}\ndata: {v: '1'}\n"), opts)
	mustReconcile(t, r, parse(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: setup, annotations: {helm.sh/hook: post-upgrade}}\ndata: {v: '2'}\n"), opts)
	if v, ok := configMapValue(t, ns, "setup", "v"); !ok || v != "2" {
		t.Errorf("setup = %q (exists %t), want the hook's content", v, ok)
	}
	if inv := inventoryData(t, ns); strings.Contains(inv, `"n":"setup"`) {
		t.Errorf("the hook is still in the inventory:\n%s", inv)
	}
}

// TestHookDone: how each kind of hook counts as finished.
func TestHookDone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc    string
		done, failed bool
		msg          string
	}{
		{"running job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nstatus: {startTime: '2026-01-01T00:00:00Z', active: 1}\n", false, false, "job not complete"},
		{"complete job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nstatus: {conditions: [{type: Complete, status: 'True'}]}\n", true, false, "complete"},
		{"failed job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nstatus: {conditions: [{type: Failed, status: 'True', reason: DeadlineExceeded, message: too slow}]}\n", false, true, "DeadlineExceeded: too slow"},
		{"running pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Running}\n", false, false, "pod phase Running"},
		{"succeeded pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Succeeded}\n", true, false, "succeeded"},
		{"failed pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Failed, message: OOMKilled}\n", false, true, "pod failed OOMKilled"},
		{"configmap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", true, false, "Resource is always ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := parse(t, "", tc.doc)
			done, failed, msg := hookDone(objs[0])
			if done != tc.done || failed != tc.failed || msg != tc.msg {
				t.Errorf("hookDone = %t, %t, %q; want %t, %t, %q", done, failed, msg, tc.done, tc.failed, tc.msg)
			}
		})
	}
}
