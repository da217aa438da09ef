package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla/flotilla/internal/eventually"
)

// No kubelet or controller manager runs, so the test plays the Deployment controller: it
// writes the status that makes the Deployment ready or failed.
func TestHealth(t *testing.T) {
	t.Parallel()
	ready := func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas,
			ReadyReplicas: *d.Spec.Replicas, AvailableReplicas: *d.Spec.Replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		}
	}
	failed := func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
					Message: `ReplicaSet "web-1" has timed out progressing.`},
			},
		}
	}
	cases := []struct {
		name        string
		setStatus   func(*appsv1.Deployment) // nil: nobody reports status
		timeout     time.Duration
		wantReady   bool
		wantStatus  string
		wantMessage string
	}{
		{name: "ready", setStatus: ready, timeout: time.Minute, wantReady: true, wantStatus: "Current"},
		{name: "failed", setStatus: failed, timeout: time.Minute, wantStatus: "Failed", wantMessage: "Progress deadline exceeded"},
		{name: "timed out", timeout: 2 * time.Second, wantStatus: "InProgress", wantMessage: "timed out after 2s"},
	}
	r := newTestReconciler(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := uniqueName("health")
			if tc.setStatus != nil {
				playDeploymentController(t, ns, "web", tc.setStatus)
			}
			opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, Wait: true, Timeout: tc.timeout}
			res, err := r.Reconcile(t.Context(), parse(t, ns, webSet), opts)
			if tc.wantReady != (err == nil) {
				t.Errorf("err = %v, want ready=%v", err, tc.wantReady)
			}
			if res.Ready == nil || *res.Ready != tc.wantReady {
				t.Errorf("Ready = %v, want %v", res.Ready, tc.wantReady)
			}
			web := res.Find("Deployment", ns, "web")
			if web == nil || web.Health == nil {
				t.Fatalf("no health for the deployment:\n%s", res)
			}
			if web.Health.Status != tc.wantStatus || !strings.Contains(web.Health.Message, tc.wantMessage) {
				t.Errorf("deployment health = %+v, want %s containing %q", *web.Health, tc.wantStatus, tc.wantMessage)
			}
			if s := res.Find("ConfigMap", ns, "settings"); s == nil || s.Health == nil || s.Health.Status != "Current" {
				t.Errorf("configmap health = %+v, want Current", s)
			}
			if !tc.wantReady && !strings.Contains(res.String(), "health: deployment.apps/web "+tc.wantStatus) {
				t.Errorf("summary does not name the unready object:\n%s", res)
			}
		})
	}
}

// playDeploymentController waits for the Deployment to exist and writes its status once,
// until the test ends.
func playDeploymentController(t *testing.T, ns, name string, set func(*appsv1.Deployment)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	deployments := clientset(t).AppsV1().Deployments(ns)
	go func() {
		defer close(done)
		err := eventually.Poll(ctx, time.Minute, func() error {
			d, err := deployments.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			set(d)
			_, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return err
		})
		if err != nil && ctx.Err() == nil {
			t.Errorf("deployment controller: write the status of %s/%s: %v", ns, name, err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}
