package reconcile

import (
	"os"
	"strings"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/project"
)

// FieldManager is the server-side apply field manager flotilla applies with.
const FieldManager = "flotilla"

// Annotations and labels flotilla reads or writes on objects.
const (
	// PruneAnnotation set to "disabled" on a live object keeps it when it leaves the set.
	PruneAnnotation = "flotilla.dev/prune"
	// InventoryLabel marks an inventory ConfigMap; its value is the assignment name.
	InventoryLabel = "flotilla.dev/inventory"
)

// Options are one assignment's sync settings.
type Options struct {
	// Name identifies the assignment; it names the inventory. Required.
	Name string
	// Namespace is given to namespaced objects that have none. Default "default".
	Namespace string
	// CreateNamespace creates Namespace if it does not exist. The namespace is not part of the
	// inventory, so it is never pruned.
	CreateNamespace bool
	// Prune deletes objects that were applied before and left the set.
	Prune bool
	// DeferPrune holds Prune back for this reconcile (a window blocks it): objects that left
	// the set are neither deleted nor forgotten; they stay in the inventory, reported as
	// PruneDeferred, and the first reconcile without DeferPrune prunes them.
	DeferPrune bool
	// Wait waits until every object is Current or Failed (kstatus), up to Timeout.
	Wait bool
	// Timeout bounds Wait. Default 5 minutes.
	Timeout time.Duration
	// SelfHeal restores objects changed by hand. Without it, drift is only reported.
	SelfHeal bool
	// SkipUnchanged takes an object whose normalised desired content hashes to what the
	// inventory recorded at its last apply for Unchanged before any request: it is neither
	// read nor compared with the cluster, so a hand edit of it goes unnoticed until a
	// reconcile without SkipUnchanged (the agent's drift check, on the release's interval).
	// The agent sets it when a new revision arrives; objects another inventory claims, or
	// left drifted by the last reconcile, are read all the same. Ignored with Adopt.
	SkipUnchanged bool
	// DryRun validates and classifies everything but writes nothing.
	DryRun bool
	// Force takes fields that another server-side-apply manager owns and objects that another
	// assignment's inventory holds, instead of reporting a conflict.
	Force bool
	// Project bounds the objects: every one must be in one of its namespaces and of a kind it
	// allows, or nothing is applied (BoundsError). When it names a ServiceAccount, objects
	// are applied, pruned and read as that ServiceAccount (impersonation), so that the API
	// server's RBAC judges them too; inventories are always the agent's own. Nil: the
	// built-in platform project, no bounds but the inventory namespace, the agent's identity.
	Project *project.Rules
	// Ignore names fields that are set when an object is created and never taken back
	// afterwards (Release.spec.ignore).
	Ignore []IgnoreRule
	// RespectManagers are field managers (globs: "*-operator") whose fields are left alone
	// once they have written them. Fields written through the scale subresource are always
	// respected.
	RespectManagers []string
	// Adopt takes over the fields of other tools' field managers (Release.spec.adopt).
	Adopt *Adopt
	// Hooks: the objects are a Helm chart's output, and those annotated helm.sh/hook are
	// hooks (hooks.go): pre-install/pre-upgrade ones run before the rest is applied,
	// post-install/post-upgrade ones after it (and its wait), each waited for, and only when
	// the rendered set changed since they last ran to success. Hooks of other events are
	// dropped. Hooks are never inventoried, pruned or reported as drift.
	Hooks bool
}

// IgnoreRule is one Release.spec.ignore entry: JSON pointer paths of the objects whose group,
// kind, name and namespace match (an empty one matches any).
type IgnoreRule struct {
	Group, Kind, Name, Namespace string
	Paths                        []string
}

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	return o
}

// Config tunes a Reconciler; the zero value gives the defaults.
type Config struct {
	// InventoryNamespace holds the inventories. Default "flotilla-system".
	InventoryNamespace string
	// AgentNamespace is the namespace the agent runs in, whose ServiceAccounts no project
	// may be applied as. Default: the in-cluster ServiceAccount's namespace
	// (inClusterNamespaceFile), when the agent runs in a pod.
	AgentNamespace string
	// Concurrency bounds the requests in flight during dry-runs, applies and deletes.
	// Default 16. It is also the agent's only client-side limit on its own API server (the
	// server's priority and fairness does the rest).
	Concurrency int
	// PollInterval is how often health and CRD establishment are checked. Default 1s.
	PollInterval time.Duration
	// ListThreshold: a kind and namespace with at least this many objects is read with one
	// LIST, fewer with a GET each. Default 4.
	ListThreshold int
}

// inClusterNamespaceFile holds the namespace of a pod's ServiceAccount.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func (c Config) withDefaults() Config {
	if c.InventoryNamespace == "" {
		c.InventoryNamespace = v1alpha1.AgentNamespace
	}
	if c.AgentNamespace == "" {
		if b, err := os.ReadFile(inClusterNamespaceFile); err == nil {
			c.AgentNamespace = strings.TrimSpace(string(b))
		}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.ListThreshold <= 0 {
		c.ListThreshold = 4
	}
	return c
}
