package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// helmFleet: the chart lives in the platform repository (with the fleet), its production
// values in a second repository, config.
const helmFleet = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: "file://%s", branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: config}
spec:
  git: {url: "file://%s", branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: platform
  path: charts/web
  targets: [{selector: {}}]
  namespace: shop
  createNamespace: true
  prune: true
  interval: 2s
  helm:
    releaseName: shop
    valuesFiles: [{source: config, path: web/prod.yaml}]
    values:
      owner: "${cluster_name}"
    postRender:
      patches:
      - patch: |
          - op: add
            path: /metadata/labels/post-rendered
            value: "yes"
        target: {kind: Deployment}
`

// webChart is a chart as a platform team writes one: helpers, a CRD in crds/ and an object
// of its kind, a pre-install/pre-upgrade migration Job, a post-install ConfigMap, a test hook,
// a subchart, a required value, the cluster's Kubernetes version, and a ${cluster_name} in a
// template that must reach the cluster as written (only values are substituted).
var webChart = map[string]string{
	"charts/web/Chart.yaml": `apiVersion: v2
name: web
version: 1.4.2
dependencies:
- name: cache
  version: 0.1.0
`,
	"charts/web/values.yaml": "replicas: 1\nimage: web:1\ndatabase: {}\ncache: {size: 1}\n",
	"charts/web/templates/_helpers.tpl": `{{- define "web.fullname" -}}{{ .Release.Name }}-web{{- end -}}
{{- define "web.labels" -}}
app.kubernetes.io/name: web
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
`,
	"charts/web/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.fullname" . }}
  labels: {{- include "web.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {{- include "web.labels" . | nindent 6 }}
  template:
    metadata:
      labels: {{- include "web.labels" . | nindent 8 }}
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
        env:
        - {name: DATABASE_HOST, value: {{ required "database.host is required: the database the shop connects to" .Values.database.host | quote }}}
`,
	"charts/web/templates/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "web.fullname" . }}-settings
  labels: {{- include "web.labels" . | nindent 4 }}
data:
  owner: {{ .Values.owner | quote }}
  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
  literal: "${cluster_name}"
`,
	"charts/web/templates/extra.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "web.fullname" . }}-extra
data: {a: b}
`,
	"charts/web/templates/widget.yaml": `apiVersion: example.com/v1
kind: Widget
metadata:
  name: {{ include "web.fullname" . }}
spec: {size: 3}
`,
	"charts/web/templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "web.fullname" . }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-1"
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "{{ .Values.image }}", args: [migrate]}]
`,
	"charts/web/templates/installed.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "web.fullname" . }}-installed
  annotations: {helm.sh/hook: "post-install,post-upgrade"}
data: {image: {{ .Values.image | quote }}}
`,
	"charts/web/templates/tests/ping.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ include "web.fullname" . }}-ping
  annotations: {helm.sh/hook: test}
spec:
  restartPolicy: Never
  containers: [{name: ping, image: busybox, args: [wget, web]}]
`,
	"charts/web/crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`,
	"charts/web/charts/cache/Chart.yaml":  "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
	"charts/web/charts/cache/values.yaml": "size: 0\n",
	"charts/web/charts/cache/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-cache}
data: {size: {{ .Values.size | quote }}}
`,
}

// migrations plays the job controller (the test clusters run none): it records each new Job
// with the Deployment's replicas at that moment (-1: no Deployment yet) and completes it.
type migrations struct {
	mu   sync.Mutex
	runs []migration
}

type migration struct {
	uid      types.UID
	replicas int32
}

func (m *migrations) seen() []migration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]migration(nil), m.runs...)
}

func playJobs(t *testing.T, cs kubernetes.Interface, ns, job, deployment string) *migrations {
	m := &migrations{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	finished := map[types.UID]bool{}
	// complete completes j unless it is done or going; false: it could not, and the watch is
	// made again, which starts with the Job as it is then.
	complete := func(j *batchv1.Job) bool {
		if finished[j.UID] || j.DeletionTimestamp != nil {
			return true
		}
		run := migration{uid: j.UID, replicas: -1}
		if d, err := cs.AppsV1().Deployments(ns).Get(ctx, deployment, metav1.GetOptions{}); err == nil {
			run.replicas = *d.Spec.Replicas
		}
		err := retry.OnError(retry.DefaultBackoff, func(error) bool { return ctx.Err() == nil }, func() error {
			now := metav1.Now()
			j.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
			}}
			_, err := cs.BatchV1().Jobs(ns).UpdateStatus(ctx, j, metav1.UpdateOptions{})
			if err != nil {
				// Completed from the Job as it is now, if it is still the one seen.
				if fresh, gerr := cs.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{}); gerr == nil && fresh.UID == j.UID {
					j = fresh
				}
			}
			return err
		})
		if err != nil {
			return false
		}
		finished[j.UID] = true
		m.mu.Lock()
		m.runs = append(m.runs, run)
		m.mu.Unlock()
		return true
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			// A watch from no resource version starts with the Job as it is, if there is one.
			w, err := cs.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + job})
			if err != nil {
				// The API server refused the watch: try again shortly (a retry's pause, not a wait).
				select {
				case <-ctx.Done():
				case <-time.After(eventually.Interval):
				}
				continue
			}
			for ev := range w.ResultChan() {
				if j, ok := ev.Object.(*batchv1.Job); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) && !complete(j) {
					break
				}
			}
			w.Stop()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

// deploymentOf reads the Deployment, failing the test if it cannot.
func deploymentOf(t *testing.T, cs kubernetes.Interface, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestHelmRelease: a chart in Git with its values in a second repository is rendered by the
// agent with the cluster's capabilities and variables and applied like manifests: CRDs first,
// the pre-install Job before the Deployment (and again, before it, on an upgrade, but not on a
// drift check), post-render patches, drift healed, a removed template pruned, and a chart that
// fails to render fails the release with Helm's message and the chart's name and version.
func TestHelmRelease(t *testing.T) {
	t.Parallel()
	platformDir, configDir := t.TempDir(), t.TempDir()
	files := map[string]string{"fleet/fleet.yaml": fmt.Sprintf(helmFleet, platformDir, configDir)}
	for k, v := range webChart {
		files[k] = v
	}
	platform := newRepo(t, platformDir, files)
	config := newRepo(t, configDir, map[string]string{"web/prod.yaml": "replicas: 2\ndatabase: {host: db.shop}\ncache: {size: 3}\n"})
	f := newFleet(t, "file://"+platformDir, map[string]map[string]string{"edge": {"region": "eu"}})
	c := f.clusters["edge"]
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	jobs := playJobs(t, cs, "shop", "shop-web-migrate", "shop-web")
	f.waitStatus("the chart release is applied", 2*time.Minute, converged("", map[string][]string{"edge": {"web"}}))

	d, err := cs.AppsV1().Deployments("shop").Get(t.Context(), "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 || d.Labels["post-rendered"] != "yes" || d.Spec.Template.Spec.Containers[0].Env[0].Value != "db.shop" {
		t.Errorf("deployment: replicas %d (want 2 from the values file), labels %v (want post-rendered=yes), env %v",
			*d.Spec.Replicas, d.Labels, d.Spec.Template.Spec.Containers[0].Env)
	}
	version, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	settings, err := cs.CoreV1().ConfigMaps("shop").Get(t.Context(), "shop-web-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"owner": "edge", "kubeVersion": version.GitVersion, "literal": "${cluster_name}"}
	for k, v := range want {
		if settings.Data[k] != v {
			t.Errorf("settings %s = %q, want %q (values substituted, the chart's output not; the cluster's version)", k, settings.Data[k], v)
		}
	}
	if v, _ := configMapData(t, c, "shop", "shop-cache", "size"); v != "3" {
		t.Errorf("subchart configmap size = %q, want 3 from the values file", v)
	}
	if v, _ := configMapData(t, c, "shop", "shop-web-installed", "image"); v != "web:1" {
		t.Errorf("post-install hook configmap image = %q, want web:1", v)
	}
	if _, err := cs.CoreV1().Pods("shop").Get(t.Context(), "shop-web-ping", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("test hook pod: %v, want not found", err)
	}
	widgets := dynamic.NewForConfigOrDie(c.RESTConfig()).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
	if _, err := widgets.Namespace("shop").Get(t.Context(), "shop-web", metav1.GetOptions{}); err != nil {
		t.Errorf("widget of the chart's CRD: %v", err)
	}
	runs := jobs.seen()
	if len(runs) != 1 || runs[0].replicas != -1 {
		t.Fatalf("migration runs = %+v, want one, before the Deployment existed", runs)
	}

	t.Run("drift on the chart's Deployment is healed, and no hook runs", func(t *testing.T) {
		if out, err := c.Kubectl(t.Context(), nil, "set", "image", "deployment/shop-web", "web=hacked", "-n", "shop"); err != nil {
			t.Fatalf("kubectl set image: %v\n%s", err, out)
		}
		eventually.Within(t, time.Minute, eventually.True("the image healed", func() bool {
			return deploymentOf(t, cs, "shop", "shop-web").Spec.Template.Spec.Containers[0].Image == "web:1"
		}))
		if runs := jobs.seen(); len(runs) != 1 {
			t.Errorf("migration runs after a drift check = %+v, want still one", runs)
		}
	})

	t.Run("a values change runs the upgrade hook before the upgrade", func(t *testing.T) {
		config.commit("more replicas", map[string]string{"web/prod.yaml": "replicas: 4\ndatabase: {host: db.shop}\ncache: {size: 3}\n"})
		eventually.Within(t, time.Minute, equal("shop-web's replicas", func() int32 { return *deploymentOf(t, cs, "shop", "shop-web").Spec.Replicas }, 4))
		runs := jobs.seen()
		if len(runs) != 2 || runs[1].uid == runs[0].uid || runs[1].replicas != 2 {
			t.Errorf("migration runs = %+v, want a second Job, run while the Deployment still had 2 replicas", runs)
		}
	})

	t.Run("a template removed from the chart is pruned", func(t *testing.T) {
		commit := platform.commit("drop extra", map[string]string{"charts/web/templates/extra.yaml": ""})
		f.waitStatus("the new chart revision", time.Minute, converged(commit, map[string][]string{"edge": {"web"}}))
		eventually.Within(t, time.Minute, eventually.True("extra pruned", func() bool {
			_, ok := configMapData(t, c, "shop", "shop-web-extra", "a")
			return !ok
		}))
	})

	t.Run("a chart that fails to render fails the release and applies nothing", func(t *testing.T) {
		before := len(jobs.seen())
		config.commit("forget the database", map[string]string{"web/prod.yaml": "replicas: 5\ndatabase: {}\ncache: {size: 3}\n"})
		st := f.waitStatus("the release fails", time.Minute, func(st hubclient.StatusView) bool {
			for _, a := range st.Assignments {
				if a.Release == "web" && a.Phase == hubclient.PhaseFailed {
					return true
				}
			}
			return false
		})
		for _, a := range st.Assignments {
			for _, want := range []string{"chart web 1.4.2", "database.host is required: the database the shop connects to"} {
				if !strings.Contains(a.Error, want) {
					t.Errorf("error %q does not contain %q", a.Error, want)
				}
			}
		}
		d, err := cs.AppsV1().Deployments("shop").Get(t.Context(), "shop-web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 4 || len(jobs.seen()) != before {
			t.Errorf("after a failed render: replicas %d (want 4 as before), migration runs %d (want %d)", *d.Spec.Replicas, len(jobs.seen()), before)
		}
	})
}
