// Package install builds the agent's manifests for one cluster and applies them with
// server-side apply: what `flotilla agent install` does, like `flux install`. The objects are
// those of deploy/agent (its least-privilege RBAC, optionally platform-admin.yaml), except
// that the Deployment reads the join token from a file mounted from its Secret, never from
// its command line.
package install

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/flotilla/flotilla/internal/pki"
)

// Names of what the agent's manifests hold, the same as deploy/agent's.
const (
	// InventoryNamespace is where the agent keeps its inventories, whatever namespace it runs in.
	InventoryNamespace = "flotilla-system"
	DefaultNamespace   = InventoryNamespace
	// DefaultImageRepository is the agent's image `make image` builds and releases publish:
	// flotilla-agent, whose entrypoint runs the agent.
	DefaultImageRepository = "ghcr.io/flotilla/flotilla-agent"
	// DefaultImageTag is the release the manifests run when the binary is not a release build
	// itself; the same as deploy/agent's and the chart's appVersion.
	DefaultImageTag = "v0.1.0"

	Name            = "flotilla-agent"
	JoinSecretName  = "flotilla-agent-join"
	JoinSecretKey   = "token"
	StateClaimName  = "flotilla-agent-state"
	InventoriesRole = "flotilla-agent-inventories"
	PlatformAdmin   = "flotilla-agent-platform-admin"
	// FieldManager owns the fields `flotilla agent install` applies.
	FieldManager = "flotilla-install"

	joinTokenDir = "/etc/flotilla/join"
	stateDir     = "/state"
	// maxHubURLs bounds --hub: a few replicas, not a list someone pasted by mistake.
	maxHubURLs = 16
)

// State volumes.
const (
	StatePVC      = "pvc"
	StateEmptyDir = "emptydir"
)

// Options say what to install.
type Options struct {
	// Namespace runs the agent (its ServiceAccount, Secret, volume and Deployment). Default
	// flotilla-system. The inventories' Role is always in InventoryNamespace.
	Namespace string
	// HubURLs are the hub's agent endpoints, https://HOST:PORT; the first is used to join.
	HubURLs []string
	// JoinToken is the one-time token from `flotilla cluster add`; it goes into a Secret only.
	JoinToken string
	// Image of the agent. Default DefaultImageRepository:DefaultImageTag.
	Image string
	// PlatformAdmin binds the agent to cluster-admin, for releases of the platform project.
	PlatformAdmin bool
	// StateVolume is StatePVC (default) or StateEmptyDir.
	StateVolume string
	// StateSize is the PVC's size. Default 2Gi.
	StateSize string
	// StorageClass of the PVC; default the cluster's.
	StorageClass string
}

// AgentVerb is what the arguments start with for image: nothing for the agent's own image,
// whose entrypoint runs the agent; "agent" for the CLI's image (ghcr.io/flotilla/flotilla,
// or a mirror of it named .../flotilla), which agents installed before flotilla-agent run.
func AgentVerb(image string) []string {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err == nil && path.Base(ref.Context().RepositoryStr()) == "flotilla" {
		return []string{"agent"}
	}
	return nil
}

// DefaultImage is the image for a binary of version v: the same release when v is one
// (v1.2.3), otherwise the release this source tree ships.
func DefaultImage(v string) string {
	tag := DefaultImageTag
	if isReleaseVersion(v) {
		tag = v
	}
	return DefaultImageRepository + ":" + tag
}

func isReleaseVersion(v string) bool {
	rest, ok := strings.CutPrefix(v, "v")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// validate checks o and fills in defaults; every error names the flag a user gave.
func (o *Options) validate() error {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("--namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if len(o.HubURLs) == 0 {
		return errors.New("--hub is required: the hub's agent endpoint, https://HOST:PORT")
	}
	if len(o.HubURLs) > maxHubURLs {
		return fmt.Errorf("--hub: %d URLs, at most %d", len(o.HubURLs), maxHubURLs)
	}
	for _, h := range o.HubURLs {
		if err := checkHubURL(h); err != nil {
			return err
		}
	}
	if _, err := pki.ParseJoinToken(o.JoinToken); err != nil {
		return fmt.Errorf("the join token: %w (give the token `flotilla cluster add NAME` printed)", err)
	}
	o.JoinToken = strings.TrimSpace(o.JoinToken)
	if o.Image == "" {
		o.Image = DefaultImage("")
	}
	if len(o.Image) > 512 || strings.ContainsAny(o.Image, " \t\r\n") {
		return fmt.Errorf("--image %q: not an image reference", o.Image)
	}
	switch o.StateVolume {
	case "":
		o.StateVolume = StatePVC
	case StatePVC, StateEmptyDir:
	default:
		return fmt.Errorf("--state-volume %q: want %s or %s", o.StateVolume, StatePVC, StateEmptyDir)
	}
	if o.StateSize == "" {
		o.StateSize = "2Gi"
	}
	if q, err := resource.ParseQuantity(o.StateSize); err != nil || q.Sign() <= 0 {
		return fmt.Errorf("--state-size %q: want a positive quantity such as 2Gi", o.StateSize)
	}
	if o.StorageClass != "" {
		if errs := validation.IsDNS1123Subdomain(o.StorageClass); len(errs) > 0 {
			return fmt.Errorf("--storage-class %q: %s", o.StorageClass, strings.Join(errs, "; "))
		}
	}
	return nil
}

func checkHubURL(h string) error {
	u, err := url.Parse(h)
	if err != nil {
		return fmt.Errorf("--hub %q: %w", h, err)
	}
	if u.Scheme != "https" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--hub %q: want the hub's agent endpoint as https://HOST:PORT", h)
	}
	return nil
}

// Manifests returns the agent's objects in the order they are applied: namespaces, then
// what refers to them. The join token is only in the Secret.
func Manifests(o Options) ([]*unstructured.Unstructured, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	labels := map[string]string{
		"app.kubernetes.io/name":       Name,
		"app.kubernetes.io/part-of":    "flotilla",
		"app.kubernetes.io/managed-by": FieldManager,
	}
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: o.Namespace}}
	var objs []runtime.Object
	objs = append(objs, &corev1.Namespace{ObjectMeta: meta(o.Namespace, "")})
	if o.Namespace != InventoryNamespace {
		objs = append(objs, &corev1.Namespace{ObjectMeta: meta(InventoryNamespace, "")})
	}
	objs = append(objs,
		&corev1.ServiceAccount{ObjectMeta: meta(Name, o.Namespace)},
		&rbacv1.Role{ObjectMeta: meta(InventoriesRole, InventoryNamespace), Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		}}},
		&rbacv1.RoleBinding{ObjectMeta: meta(InventoriesRole, InventoryNamespace), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: InventoriesRole}},
		// Impersonation of the ServiceAccounts deploy/agent lists only (by name), never any.
		&rbacv1.ClusterRole{ObjectMeta: meta(Name, ""), Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{"deployer"}, Verbs: []string{"impersonate"},
		}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta(Name, ""), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: Name}},
	)
	if o.PlatformAdmin {
		objs = append(objs, &rbacv1.ClusterRoleBinding{ObjectMeta: meta(PlatformAdmin, ""), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}})
	}
	objs = append(objs, &corev1.Secret{ObjectMeta: meta(JoinSecretName, o.Namespace), Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{JoinSecretKey: []byte(o.JoinToken)}})
	state := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if o.StateVolume == StatePVC {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: meta(StateClaimName, o.Namespace), Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(o.StateSize)}},
		}}
		if o.StorageClass != "" {
			pvc.Spec.StorageClassName = ptr.To(o.StorageClass)
		}
		objs = append(objs, pvc)
		state = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: StateClaimName}}
	}
	objs = append(objs, deployment(o, meta(Name, o.Namespace), state))

	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func deployment(o Options, meta metav1.ObjectMeta, state corev1.VolumeSource) *appsv1.Deployment {
	selector := map[string]string{"app.kubernetes.io/name": Name}
	return &appsv1.Deployment{
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			// One agent per cluster; its identity lives in the state dir.
			Replicas: ptr.To[int32](1),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: Name,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
						FSGroup: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "agent",
						Image: o.Image,
						// The token is read from the Secret's file, so that it is in no process
						// listing and no pod spec.
						Args: append(AgentVerb(o.Image),
							"--hub="+strings.Join(o.HubURLs, ","),
							"--state-dir="+stateDir,
							"--join-token-file="+joinTokenDir+"/"+JoinSecretKey,
							"--log-format=json",
						),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), RunAsNonRoot: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "state", MountPath: stateDir},
							{Name: "join-token", MountPath: joinTokenDir, ReadOnly: true},
							// The root filesystem is read-only: temporary files go here.
							{Name: "tmp", MountPath: "/tmp"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "state", VolumeSource: state},
						{Name: "join-token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: JoinSecretName, DefaultMode: ptr.To[int32](0o440),
							Items: []corev1.KeyToPath{{Key: JoinSecretKey, Path: JoinSecretKey}},
						}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

// toUnstructured converts a typed object, with its kind, and drops the empty status and
// creation timestamps the conversion adds: they are not ours to apply.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return nil, fmt.Errorf("kind of %T: %v", obj, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	return u, nil
}
