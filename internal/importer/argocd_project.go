package importer

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// projectClusterLabelPrefix starts the cluster label a Project with several destination
// clusters selects: project.argocd.argoproj.io/NAME=allowed.
const projectClusterLabelPrefix = "project.argocd.argoproj.io/"

// project converts an AppProject. Argo CD's "default" project allows everything and becomes
// Flotilla's built-in platform project.
func (a *argo) project(o *Object) {
	f := func(l Level, field, msg, do string) { a.find(o, l, field, msg, do) }
	if o.Name == "default" {
		a.projects["default"] = ""
		o.markUsed("spec")
		f(Note, "", "Argo CD's default project became Flotilla's built-in platform project (every source, cluster, namespace and kind)",
			"if your default project is narrowed, define a Flotilla Project named platform (docs/projects.md)")
		return
	}
	p := v1alpha1.Project{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindProject}
	p.Metadata.Name = a.names.assign(v1alpha1.KindProject, o.Name, &a.res.Report, o, "metadata.name")
	if p.Metadata.Name == v1alpha1.ProjectPlatform {
		p.Metadata.Name = a.names.assign(v1alpha1.KindProject, o.Name+"-argocd", &a.res.Report, o, "metadata.name")
	}
	s := &p.Spec

	for i, it := range o.list("spec.sourceRepos") {
		r, _ := it.(string)
		field := fmt.Sprintf("spec.sourceRepos[%d]", i)
		switch {
		case strings.HasPrefix(r, "!"):
			f(LeftOut, field, fmt.Sprintf("%q denies a repository: Flotilla projects list what they allow", r), "narrow the other sourceRepos patterns instead")
		case r == "*":
			s.Sources = append(s.Sources, "*")
		case strings.Contains(r, "://") || strings.Contains(r, "@"):
			pat, _ := normalRepoURL(r)
			if msg := urlPatternProblem(pat); msg != "" {
				f(LeftOut, field, fmt.Sprintf("%q: %s", r, msg), "")
				continue
			}
			s.Sources = append(s.Sources, pat, pat+".git")
		default:
			f(LeftOut, field, fmt.Sprintf("%q is neither \"*\" nor a URL pattern", r), "")
		}
	}
	s.Sources = slices.Compact(s.Sources)

	var clusters, namespaces []string
	anyCluster := false
	pairs := map[string][]string{}
	for i, it := range o.list("spec.destinations") {
		m, _ := it.(map[string]any)
		field := fmt.Sprintf("spec.destinations[%d]", i)
		name, _ := m["name"].(string)
		server, _ := m["server"].(string)
		ns, _ := m["namespace"].(string)
		var c string
		switch {
		case strings.HasPrefix(name, "!") || strings.HasPrefix(server, "!") || strings.HasPrefix(ns, "!"):
			f(LeftOut, field, "a denying destination (\"!\"): Flotilla projects list what they allow", "narrow the other destinations instead")
			continue
		case name == "*" || server == "*" || (name == "" && server == ""):
			anyCluster = true
		case strings.ContainsAny(name+server, "*?["):
			f(LeftOut, field, fmt.Sprintf("cluster pattern %q: Flotilla selects clusters by labels", name+server), "label the clusters it matches and set spec.clusterSelector")
			continue
		default:
			c = a.clusterLabel(name, server)
			clusters = append(clusters, c)
		}
		switch {
		case ns == "":
		case ns == "*" || !strings.ContainsAny(strings.ReplaceAll(ns, "*", ""), "?[]!"):
			if msg := namePatternProblem(ns); msg != "" {
				f(LeftOut, field+".namespace", fmt.Sprintf("%q: %s", ns, msg), "")
				continue
			}
			namespaces = append(namespaces, ns)
			pairs[c] = append(pairs[c], ns)
		default:
			f(LeftOut, field+".namespace", fmt.Sprintf("namespace pattern %q: Flotilla namespace patterns have \"*\" only", ns), "list the namespaces")
		}
	}
	slices.Sort(namespaces)
	s.Namespaces = slices.Compact(namespaces)
	slices.Sort(clusters)
	clusters = slices.Compact(clusters)
	switch {
	case anyCluster || len(clusters) == 0:
	case len(clusters) == 1:
		s.ClusterSelector.MatchLabels = map[string]string{ClusterLabel: clusters[0]}
	default:
		key := projectClusterLabelPrefix + p.Metadata.Name
		s.ClusterSelector.MatchLabels = map[string]string{key: "allowed"}
		f(Action, "spec.destinations", fmt.Sprintf("%d destination clusters (%s=%s): Flotilla selects a project's clusters by labels, so the project selects %s=allowed",
			len(clusters), ClusterLabel, strings.Join(clusters, ","), key), fmt.Sprintf("label each of them: flotilla cluster label CLUSTER %s=allowed", key))
	}
	if !anyCluster && len(clusters) > 1 && len(pairs) > 1 {
		f(LeftOut, "spec.destinations", "each destination pairs a cluster with namespaces; a Flotilla project's namespaces hold on every cluster it selects", "split the project per cluster if the difference matters")
	}

	kinds := func(field string, deny bool) {
		for i, it := range o.list(field) {
			m, _ := it.(map[string]any)
			g, _ := m["group"].(string)
			k, _ := m["kind"].(string)
			gk := v1alpha1.GroupKind{Group: g, Kind: k}
			ff := fmt.Sprintf("%s[%d]", field, i)
			if problem := groupKindProblem(gk); problem != "" {
				f(LeftOut, ff, problem, "")
				continue
			}
			switch {
			case deny:
				s.Kinds.Deny = append(s.Kinds.Deny, gk)
			case k == "*":
				f(LeftOut, ff, fmt.Sprintf("allows every cluster-scoped kind of group %q: Flotilla allows cluster-scoped kinds by name only", g), "list the cluster-scoped kinds the project needs in spec.kinds.allow")
			case g == "rbac.authorization.k8s.io" && (k == "ClusterRole" || k == "ClusterRoleBinding"):
				f(LeftOut, ff, fmt.Sprintf("%s: no project but platform may create it in Flotilla", k), "deliver it with a release of the platform project")
			default:
				s.Kinds.Allow = append(s.Kinds.Allow, gk)
			}
		}
	}
	kinds("spec.clusterResourceWhitelist", false)
	kinds("spec.clusterResourceBlacklist", true)
	kinds("spec.namespaceResourceBlacklist", true)
	if l := o.list("spec.namespaceResourceWhitelist"); len(l) > 0 {
		f(LeftOut, "spec.namespaceResourceWhitelist", fmt.Sprintf("%d allowed namespaced kinds: Flotilla allows every namespaced kind a project does not deny", len(l)), "list the kinds to refuse in spec.kinds.deny")
	}

	a.projectServiceAccount(o, f, &p)
	for _, k := range []string{"description"} {
		if o.has("spec." + k) {
			o.markUsed("spec." + k)
		}
	}
	if ws := o.list("spec.syncWindows"); len(ws) > 0 {
		a.windows = append(a.windows, pendingWindows{o: o, project: o.Name, windows: ws})
	}
	if o.has("spec.roles") {
		o.markUsed("spec.roles")
		f(LeftOut, "spec.roles", "project roles: Flotilla's user API has roles per token and group", "create tokens or map groups with --project "+p.Metadata.Name+" (docs/access.md)")
	}
	for _, field := range o.leftovers("spec") {
		f(LeftOut, field, "not converted: Flotilla has no equivalent", "see docs/import.md")
	}
	a.projects[o.Name] = p.Metadata.Name
	a.res.Projects = append(a.res.Projects, p)
}

// projectServiceAccount sets the ServiceAccount a Flotilla project applies as.
func (a *argo) projectServiceAccount(o *Object, f func(Level, string, string, string), p *v1alpha1.Project) {
	for i, it := range o.list("spec.destinationServiceAccounts") {
		m, _ := it.(map[string]any)
		sa, _ := m["defaultServiceAccount"].(string)
		ns, _ := m["namespace"].(string)
		if n, name, ok := strings.Cut(sa, ":"); ok {
			ns, sa = n, name
		}
		field := fmt.Sprintf("spec.destinationServiceAccounts[%d]", i)
		if p.Spec.ServiceAccount != nil {
			f(LeftOut, field, "a Flotilla project applies as one ServiceAccount: only the first destinationServiceAccounts entry was taken", "")
			continue
		}
		if sa == "" || ns == "" || strings.ContainsAny(ns, "*?[!") || namePatternProblem(ns) != "" || len(validation.IsDNS1123Subdomain(sa)) > 0 {
			f(LeftOut, field, fmt.Sprintf("ServiceAccount %q in namespace %q: a Flotilla project needs one ServiceAccount in a named namespace", sa, ns), "")
			continue
		}
		// A ServiceAccount in a namespace the project writes could be handed to the team's own
		// pods or bound to more rights by its releases; one in kube-* or the agent's namespace
		// is refused by the hub. Either way it moves to the tenants' namespace.
		why := v1alpha1.ReservedServiceAccountNamespace(ns)
		if why == "" && slices.ContainsFunc(p.Spec.Namespaces, func(pat string) bool { return v1alpha1.Glob(pat, ns) }) {
			why = "the project's releases write that namespace, so they could run a pod as it or grant it more"
		}
		if why != "" {
			f(Action, field, fmt.Sprintf("Argo CD applied as %s/%s; a Flotilla project may not (%s): the project names %s/%s instead",
				ns, sa, why, TenantsNamespace, sa), saHint)
			ns = TenantsNamespace
		}
		p.Spec.ServiceAccount = &v1alpha1.ServiceAccountRef{Namespace: ns, Name: sa}
	}
	if p.Spec.ServiceAccount == nil {
		p.Spec.ServiceAccount = &v1alpha1.ServiceAccountRef{Namespace: TenantsNamespace, Name: "flotilla-" + p.Metadata.Name}
		f(LeftOut, "spec.destinationServiceAccounts", fmt.Sprintf("Argo CD applied this project's objects as its own controller; a Flotilla project applies them as a ServiceAccount: the project names %s/%s, in a namespace no project writes, which does not exist yet",
			TenantsNamespace, p.Spec.ServiceAccount.Name), saHint+", or change spec.serviceAccount")
	}
}

// saHint is what to do about a project's ServiceAccount: the agent's shipped RBAC impersonates
// ServiceAccounts named "deployer" only (deploy/agent/rbac.yaml), so another name needs a line there.
const saHint = "create that ServiceAccount in each cluster with RBAC for the project's namespaces and kinds (docs/projects.md), " +
	"and add its name to the resourceNames of the flotilla-agent ClusterRole (deploy/agent/rbac.yaml) so that the agent may impersonate it"

// TenantsNamespace holds the ServiceAccounts imported projects apply as (docs/projects.md):
// a namespace no project may write, so that no release can run a pod as its project's
// ServiceAccount, hold a token for it or bind it more rights.
const TenantsNamespace = "flotilla-tenants"
