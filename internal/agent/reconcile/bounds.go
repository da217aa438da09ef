package reconcile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flotilla/flotilla/internal/project"
)

// checkBounds refuses every object outside the assignment's bounds, before anything is read or
// written:
//
//   - for every assignment, whatever its project: no object in the inventory namespace, and
//     not that Namespace itself. Only the reconciler writes there, as the agent, so that no
//     release can read, forge or delete another release's inventory;
//   - with a project: every namespaced object (after defaulting) in one of the project's
//     namespaces, every Namespace object named as one, and every kind allowed by the
//     project (project.Rules.KindRule, the decision the hub makes too; namespaced as the
//     cluster serves the kind).
//
// For a team's project (project.Rules.IdentityRule, ServiceAccountRule), too: its
// ServiceAccount is in no kube-* namespace, not in the inventory namespace and not in the
// agent's own (agentNamespaces); and no object hands that ServiceAccount to something the
// release runs, a workload whose pods run as it or a token Secret for it.
//
// The Namespace that CreateNamespace adds is held to the namespace rule only: the release
// did not declare it, and its name is the release's own namespace. Whether the project's
// ServiceAccount may create it is for RBAC to say.
func checkBounds(items []*item, rules *project.Rules, inventoryNamespace string, agentNamespaces ...string) error {
	var problems []string
	if rules != nil {
		if why := rules.ServiceAccountRule(append([]string{inventoryNamespace}, agentNamespaces...)...); why != "" {
			problems = append(problems, why)
		}
	}
	refuse := func(it *item, format string, args ...any) {
		where := it.ref.String()
		if it.ref.Namespace != "" {
			where += fmt.Sprintf(" in namespace %q", it.ref.Namespace)
		}
		problems = append(problems, where+": "+fmt.Sprintf(format, args...))
	}
	for _, it := range items {
		isNamespace := it.ref.Group == "" && it.ref.Kind == "Namespace"
		switch {
		case it.namespaced && it.ref.Namespace == inventoryNamespace:
			refuse(it, "namespace %s holds the agent's inventories; only the agent writes there", inventoryNamespace)
			continue
		case isNamespace && it.ref.Name == inventoryNamespace && !it.untracked:
			refuse(it, "namespace %s holds the agent's inventories; only the agent manages it", inventoryNamespace)
			continue
		}
		if rules == nil {
			continue
		}
		if why := rules.KindRule(it.ref.Group, it.ref.Kind, it.namespaced); why != "" && !it.untracked {
			refuse(it, "kind %s is not allowed by project %q: it %s", groupKind(it.ref), rules.Name, why)
			continue
		}
		if it.desired != nil {
			if why := rules.IdentityRule(it.desired, it.ref.Namespace); why != "" {
				refuse(it, "%s", why)
				continue
			}
		}
		ns := it.ref.Namespace
		if isNamespace {
			ns = it.ref.Name
		}
		if (it.namespaced || isNamespace) && !rules.AllowsNamespace(ns) {
			refuse(it, "namespace %s is not one of project %q's namespaces (%s)", ns, rules.Name, namespaceList(rules.Namespaces))
		}
	}
	if len(problems) > 0 {
		name := ""
		if rules != nil {
			name = rules.Name
		}
		return &BoundsError{Project: name, Problems: problems}
	}
	return nil
}

func groupKind(r ObjectRef) string {
	if r.Group == "" {
		return r.Kind
	}
	return r.Group + "/" + r.Kind
}

func namespaceList(ns []string) string {
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}

// BoundsError lists every object outside the assignment's bounds (see checkBounds): its
// project's namespaces and kinds, or the inventory namespace. Nothing was applied.
type BoundsError struct {
	// Project is the project whose rules were broken; "" when the assignment has none and
	// only the inventory namespace was at stake.
	Project  string
	Problems []string
}

func (e *BoundsError) Error() string {
	by := ""
	if e.Project != "" {
		by = fmt.Sprintf(" by project %q", e.Project)
	}
	return fmt.Sprintf("%d object(s) refused%s, nothing applied:\n  %s", len(e.Problems), by, strings.Join(e.Problems, "\n  "))
}

// IsOutOfBounds reports whether err is (or wraps) a *BoundsError.
func IsOutOfBounds(err error) bool {
	var be *BoundsError
	return errors.As(err, &be)
}

// serviceAccountOf is the ServiceAccount the project's objects are applied as; nil: the agent.
func serviceAccountOf(rules *project.Rules) *ServiceAccount {
	if rules == nil || rules.ServiceAccount == nil || rules.ServiceAccount.Name == "" {
		return nil
	}
	return &ServiceAccount{Namespace: rules.ServiceAccount.Namespace, Name: rules.ServiceAccount.Name}
}

// actingAs says, for errors, whose rules and identity a reconcile ran under:
// ` (project "team-a", as ServiceAccount team-a/deployer)`; "" for the platform default.
func actingAs(rules *project.Rules) string {
	if rules == nil {
		return ""
	}
	if sa := serviceAccountOf(rules); sa != nil {
		return fmt.Sprintf(" (project %q, as ServiceAccount %s)", rules.Name, sa)
	}
	return fmt.Sprintf(" (project %q)", rules.Name)
}
