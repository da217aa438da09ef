package v1alpha1

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
)

// kindName is what a Kubernetes kind looks like ("Deployment", "HTTPRoute").
var kindName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

func knownProjects(projects map[string]string) string {
	names := slices.Sorted(maps.Keys(projects))
	if len(names) == 0 {
		return " (the fleet defines no Project; leave spec.project unset for the platform project)"
	}
	return fmt.Sprintf(" (projects: %s, and the built-in %s)", strings.Join(names, ", "), ProjectPlatform)
}

func validateProjectSpec(name string, s ProjectSpec, add func(field, msg string)) {
	platform := name == ProjectPlatform
	for i, p := range s.Sources {
		f := fmt.Sprintf("spec.sources[%d]", i)
		if isURLPattern(p) {
			if msg := checkURLPattern(p); msg != "" {
				add(f, msg)
			}
			continue
		}
		if msg := checkNamePattern(p); msg != "" {
			add(f, fmt.Sprintf("%q is neither a source name (a pattern with \"*\" allowed) nor a URL pattern with \"://\": %s", p, msg))
		}
	}
	validateLabels("spec.clusterSelector.matchLabels", s.ClusterSelector.MatchLabels, add)
	for i, p := range s.Namespaces {
		if msg := checkNamePattern(p); msg != "" {
			add(fmt.Sprintf("spec.namespaces[%d]", i), fmt.Sprintf("%q is not a namespace name or pattern: %s", p, msg))
		}
	}
	for _, list := range []struct {
		field string
		kinds []GroupKind
	}{{"spec.kinds.allow", s.Kinds.Allow}, {"spec.kinds.deny", s.Kinds.Deny}} {
		for i, gk := range list.kinds {
			validateGroupKind(fmt.Sprintf("%s[%d]", list.field, i), gk, add)
			if list.field == "spec.kinds.allow" && !platform && gk.Group == "rbac.authorization.k8s.io" &&
				(gk.Kind == "ClusterRole" || gk.Kind == "ClusterRoleBinding") {
				add(fmt.Sprintf("%s[%d]", list.field, i), fmt.Sprintf("%s cannot be allowed to a project but %s: it grants rights in every namespace", gk.Kind, ProjectPlatform))
			}
		}
	}
	switch sa := s.ServiceAccount; {
	case sa == nil && !platform:
		add("spec.serviceAccount", "must be set: the agent applies a project's objects as this ServiceAccount (only the platform project may use the agent's own identity)")
	case sa != nil:
		if sa.Namespace == "" {
			add("spec.serviceAccount.namespace", "must be set")
		} else if msgs := content.IsDNS1123Label(sa.Namespace); len(msgs) > 0 {
			add("spec.serviceAccount.namespace", fmt.Sprintf("%q is not a valid namespace name: %s", sa.Namespace, strings.Join(msgs, "; ")))
		} else if why := ReservedServiceAccountNamespace(sa.Namespace); why != "" {
			add("spec.serviceAccount.namespace", fmt.Sprintf("%q refused: %s", sa.Namespace, why))
		}
		if sa.Name == "" {
			add("spec.serviceAccount.name", "must be set")
		} else if msgs := content.IsDNS1123Subdomain(sa.Name); len(msgs) > 0 {
			add("spec.serviceAccount.name", fmt.Sprintf("%q is not a valid ServiceAccount name: %s", sa.Name, strings.Join(msgs, "; ")))
		}
	}
	if fl := s.Fleet; fl != nil {
		if platform {
			add("spec.fleet", fmt.Sprintf("the %s project's configuration is the main fleet; a tenant fleet repository belongs to a team's project", ProjectPlatform))
		}
		validateFleetURL(fl, add)
		if fl.Path != "" {
			for _, msg := range checkPath(fl.Path) {
				add("spec.fleet.path", msg)
			}
			if strings.Contains(fl.Path, "{{") {
				add("spec.fleet.path", "must be a plain path, not a template")
			}
		}
	}
}

func validateFleetURL(fl *ProjectFleet, add func(field, msg string)) {
	if fl.URL == "" {
		add("spec.fleet.url", "must be set")
		return
	}
	if strings.HasPrefix(fl.URL, "/") || !strings.Contains(fl.URL, "://") {
		return // a path or scp-like ssh: the hub's source rules apply
	}
	u, err := url.Parse(fl.URL)
	if err != nil {
		add("spec.fleet.url", fmt.Sprintf("is not a URL: %v", err))
		return
	}
	switch u.Scheme {
	case "https", "ssh", "file":
	case "http":
		if !fl.Insecure {
			add("spec.fleet.url", "is plain http://: set insecure: true to allow it")
		}
	default:
		add("spec.fleet.url", fmt.Sprintf("scheme %q is not supported: want https://, ssh://, file:// or http:// with insecure: true", u.Scheme))
	}
}

// checkNamePattern checks a name with "*" globs: what is left when every "*" stands for a
// letter must be a DNS label.
func checkNamePattern(p string) string {
	if p == "" {
		return "must not be empty"
	}
	if p == "*" {
		return ""
	}
	if msgs := content.IsDNS1123Label(strings.ReplaceAll(p, "*", "a")); len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	return ""
}

func checkURLPattern(p string) string {
	scheme, rest, _ := strings.Cut(p, "://")
	switch strings.ToLower(scheme) {
	case "https", "http", "ssh", "file", "oci":
	default:
		return fmt.Sprintf("URL pattern %q: scheme %q is not a source scheme: want https, http, ssh or file (Git, Helm repositories), or oci (OCI artifacts, Helm charts in a registry)", p, scheme)
	}
	host, _, _ := strings.Cut(rest, "/")
	if host == "" && !strings.EqualFold(scheme, "file") {
		return fmt.Sprintf("URL pattern %q has no host", p)
	}
	if strings.ContainsAny(p, "?#") {
		return fmt.Sprintf("URL pattern %q: a query or fragment never matches", p)
	}
	if strings.Contains(host, "@") {
		return fmt.Sprintf("URL pattern %q: leave credentials out; URLs are matched without them", p)
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == ".." || seg == "." {
			return fmt.Sprintf("URL pattern %q: %q segments never match", p, seg)
		}
	}
	return ""
}

func validateGroupKind(field string, gk GroupKind, add func(field, msg string)) {
	switch {
	case gk.Kind == "":
		add(field+".kind", `must be set: a kind ("Deployment") or "*"`)
	case gk.Kind != "*" && !kindName.MatchString(gk.Kind):
		add(field+".kind", fmt.Sprintf("%q is not a kind: want a name such as \"Deployment\", or \"*\"", gk.Kind))
	}
	if strings.Contains(gk.Group, "/") {
		add(field+".group", "is the group alone, without a version (\"apps\", not \"apps/v1\")")
	} else if gk.Group != "" && gk.Group != "*" {
		if msgs := content.IsDNS1123Subdomain(gk.Group); len(msgs) > 0 {
			add(field+".group", fmt.Sprintf("%q is not an API group: %s (\"\" is the core group, \"*\" any group)", gk.Group, strings.Join(msgs, "; ")))
		}
	}
}

// AgentNamespace is the namespace deploy/agent, the chart and `flotilla agent install` run the
// agent in, and where it keeps its inventories. The hub does not know where each agent runs:
// it refuses this one, and each agent refuses its own too.
const AgentNamespace = "flotilla-system"

// ReservedServiceAccountNamespace says why a Project's ServiceAccount may not live in
// namespace ns, or "" when it may. The agent impersonates that ServiceAccount, so one in
// kube-system (or any kube-* namespace) would run a team's objects with a controller's
// rights, and one in the agent's namespace with the agent's own (agentNamespaces, when the
// caller knows where the agent runs; AgentNamespace always).
func ReservedServiceAccountNamespace(ns string, agentNamespaces ...string) string {
	if strings.HasPrefix(ns, "kube-") {
		return "kube-* namespaces hold the cluster's own ServiceAccounts (controllers, kube-proxy), which a project must never act as"
	}
	if ns == AgentNamespace || slices.Contains(agentNamespaces, ns) {
		return "it is the agent's namespace, whose ServiceAccounts (the agent's own among them) a project must never act as"
	}
	return ""
}
