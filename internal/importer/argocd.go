package importer

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// ClusterLabel is the cluster label the importer targets Argo CD destinations by: a release
// from an Application whose destination is cluster "prod-eu" targets clusters labelled
// argocd.argoproj.io/cluster=prod-eu. The user puts it on the Flotilla clusters.
const ClusterLabel = "argocd.argoproj.io/cluster"

// inClusterServer is the server URL of Argo CD's own cluster, which Argo CD names in-cluster.
const inClusterServer = "https://kubernetes.default.svc"

// ArgoCDOptions tune the Argo CD conversion.
type ArgoCDOptions struct {
	// Repos maps a repository URL to a local checkout of it, where Git directory generators
	// are expanded. A generator whose repository has none is expanded only when its paths
	// have no wildcard.
	Repos map[string]string
	// Limits bound the directories a generator may expand to.
	MaxGeneratedReleases int
}

type argo struct {
	res      *Result
	opts     ArgoCDOptions
	names    *names
	sources  map[string]string // repoURL + "\x00" + revision -> Source name
	creds    []credential
	projects map[string]string // Argo CD project -> Flotilla project ("" is platform)
	clusters map[string]string // label value -> how Argo CD names the cluster
	apps     []appRecord       // the converted releases, for sync windows
	windows  []pendingWindows
}

// ArgoCD converts Argo CD objects into a fleet. Objects of other kinds are reported.
func ArgoCD(objs []*Object, opts ArgoCDOptions) *Result {
	if opts.MaxGeneratedReleases == 0 {
		opts.MaxGeneratedReleases = 1000
	}
	a := &argo{res: &Result{Tool: "argocd"}, opts: opts, names: newNames(), sources: map[string]string{},
		projects: map[string]string{}, clusters: map[string]string{}}
	// Secrets and projects first: Sources and Releases refer to them.
	for _, o := range objs {
		if o.Kind == "Secret" && o.APIVersion == "v1" {
			a.secret(o)
		}
	}
	for _, o := range objs {
		if o.Kind == "AppProject" && o.Group() == "argoproj.io" {
			a.project(o)
		}
	}
	for _, o := range objs {
		switch {
		case o.Kind == "Secret" && o.APIVersion == "v1", o.Kind == "AppProject" && o.Group() == "argoproj.io":
		case o.Kind == "Application" && o.Group() == "argoproj.io":
			a.application(o)
		case o.Kind == "ApplicationSet" && o.Group() == "argoproj.io":
			a.applicationSet(o)
		default:
			a.other(o)
		}
	}
	a.syncWindows()
	for _, v := range sortedKeys(a.clusters) {
		a.res.Report.add(Finding{Level: Action, Message: fmt.Sprintf("releases target Argo CD destination %s by the cluster label %s=%s", a.clusters[v], ClusterLabel, v),
			Do: fmt.Sprintf("label the Flotilla cluster that replaces it: flotilla cluster label CLUSTER %s=%s", ClusterLabel, v)})
	}
	a.res.Report.sort()
	return a.res
}

func (a *argo) find(o *Object, l Level, field, msg, do string) {
	a.res.Report.add(Finding{Level: l, File: o.File, Object: o.ID(), Field: field, Message: msg, Do: do})
}

// other reports an object that is not Argo CD's: manifests beside the Applications keep their
// own annotations, but hooks and waves mean nothing to Flotilla.
func (a *argo) other(o *Object) {
	reportHooks(&a.res.Report, o)
	a.find(o, Note, "", fmt.Sprintf("%s is not an Argo CD Application, ApplicationSet, AppProject or repository Secret: not converted", o.APIVersion), "")
}

// reportHooks reports Argo CD and Helm hook and wave annotations of a manifest.
func reportHooks(rep *Report, o *Object) {
	ann, _ := lookup(o.m, "metadata.annotations").(map[string]any)
	for _, k := range sortedKeys(ann) {
		var msg, do string
		switch k {
		case "argocd.argoproj.io/hook", "helm.sh/hook":
			msg = fmt.Sprintf("hook %v: Flotilla has no sync hooks; the object is applied with the others", ann[k])
			do = "run it as a Release of its own that the others dependsOn, or as a Job your pipeline starts"
		case "argocd.argoproj.io/sync-wave", "helm.sh/hook-weight":
			msg = fmt.Sprintf("sync wave %v: Flotilla applies a release's objects together (CRDs and namespaces first)", ann[k])
			do = "split objects that must come first into their own Release and use spec.dependsOn"
		case "argocd.argoproj.io/hook-delete-policy", "helm.sh/hook-delete-policy", "argocd.argoproj.io/sync-options", "argocd.argoproj.io/compare-options":
			msg = fmt.Sprintf("%v: no Flotilla equivalent", ann[k])
			do = "remove the annotation, or see docs/import.md for the closest setting"
		default:
			continue
		}
		rep.add(Finding{Level: LeftOut, File: o.File, Object: o.ID(), Field: "metadata.annotations." + k, Message: msg, Do: do})
	}
}

// application converts one Application.
func (a *argo) application(o *Object) {
	a.app(o, "", o.Name, nil)
}

// appContext is what a generator adds to a templated Application.
type appContext struct {
	// selector is the cluster generator's, when one produced the parameters.
	selector *v1alpha1.LabelSelector
}

var (
	commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)
	tagRE    = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
	semverRE = regexp.MustCompile(`[\^~<>=*]|^v?[0-9]+(\.[0-9]+)?\.(x|X|\*)|^v?[0-9]+\.[0-9]+$|\s-\s|\|\|`)
)

// app converts an Application, or the template of an ApplicationSet with its parameters
// substituted (then o is a synthetic object and prefix is "spec.template.").
func (a *argo) app(o *Object, prefix, name string, ctx *appContext) {
	f := func(l Level, field, msg, do string) { a.find(o, l, prefix+field, msg, do) }
	if srcs := o.list("spec.sources"); len(srcs) > 0 {
		f(LeftOut, "spec.sources", fmt.Sprintf("%d sources: a Flotilla release has one", len(srcs)),
			"make one Release per Git source with a path (a $values or ref source has no Flotilla equivalent)")
		return
	}
	src, _ := lookup(o.m, "spec.source").(map[string]any)
	if src == nil {
		o.markUsed("spec.source")
		f(LeftOut, "spec.source", "no source: not converted", "")
		return
	}
	repoURL := o.str("spec.source.repoURL")
	rev := o.str("spec.source.targetRevision")
	p := o.str("spec.source.path")
	for _, k := range []string{"chart", "plugin", "helm"} {
		if o.has("spec.source." + k) {
			o.markUsed("spec.source." + k)
			what := map[string]string{"chart": "a Helm chart from a Helm repository", "plugin": "a config management plugin", "helm": "Helm values for a chart in Git"}[k]
			do := "render it into plain manifests in Git (helm template, or the plugin's output) and import again, or keep it in Argo CD until Flotilla has Helm releases"
			f(LeftOut, "spec.source."+k, fmt.Sprintf("%s: Flotilla renders plain manifests and kustomizations only; the release was not converted", what), do)
			return
		}
	}
	if strings.HasPrefix(repoURL, "oci://") {
		f(LeftOut, "spec.source.repoURL", "an OCI repository: not a Flotilla source kind yet; the release was not converted", "push the manifests to Git, or keep it in Argo CD for now")
		return
	}
	if jn := lookup(o.m, "spec.source.directory.jsonnet"); jn != nil {
		o.markUsed("spec.source.directory.jsonnet")
		f(LeftOut, "spec.source.directory.jsonnet", "Jsonnet: Flotilla does not evaluate Jsonnet; the release was not converted", "render the Jsonnet into YAML in Git (jsonnet -y) and import again")
		return
	}
	if repoURL == "" || strings.Contains(repoURL, "{{") || strings.ContainsRune(repoURL, 0) {
		f(LeftOut, "spec.source.repoURL", fmt.Sprintf("repository %q cannot be converted (unset, or a generator parameter Flotilla cannot fill); the release was not converted", show(repoURL)), "")
		return
	}
	if strings.Contains(rev, "{{") || strings.ContainsRune(rev, 0) {
		f(LeftOut, "spec.source.targetRevision", fmt.Sprintf("revision %q depends on the cluster: a Flotilla source has one revision; the release was not converted", show(rev)), "")
		return
	}
	cleanPath, ok := releasePath(p)
	if ok {
		if _, err := (v1alpha1.ReleaseSpec{Path: cleanPath}).PathTemplate(); err != nil {
			ok = false
		}
	}
	if !ok {
		f(LeftOut, "spec.source.path", fmt.Sprintf("path %q cannot be converted (absolute, with \"..\", or a generator parameter Flotilla cannot fill); the release was not converted", show(p)), "")
		return
	}

	rel := v1alpha1.Release{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindRelease}
	rel.Metadata.Name = a.names.assign(v1alpha1.KindRelease, name, &a.res.Report, o, prefix+"metadata.name")
	rel.Spec.Source = a.source(o, prefix, repoURL, rev)
	rel.Spec.Path = cleanPath

	// How the directory is read.
	if d, _ := lookup(o.m, "spec.source.directory").(map[string]any); d != nil {
		if r, _ := o.boolean("spec.source.directory.recurse"); !r {
			f(Note, "spec.source.directory.recurse", "Argo CD read only the top directory; Flotilla reads subdirectories too", "move subdirectories that are not part of this release elsewhere")
		}
		for _, k := range []string{"include", "exclude"} {
			if v := o.str("spec.source.directory." + k); v != "" {
				f(LeftOut, "spec.source.directory."+k, fmt.Sprintf("%s %q: Flotilla reads every YAML file of the path", k, v), "add a kustomization.yaml listing the files to apply")
			}
		}
	} else if !o.has("spec.source.kustomize") {
		f(Note, "spec.source", "Argo CD reads a plain directory without its subdirectories (directory.recurse false) and evaluates *.jsonnet files; Flotilla reads subdirectories too and ignores Jsonnet", "check that the path holds only this release's manifests")
	}
	if k := o.mapAt("spec.source.kustomize"); len(k) > 0 {
		for _, key := range sortedKeys(k) {
			f(LeftOut, "spec.source.kustomize."+key, "kustomize override: Flotilla builds the kustomization as it is in Git", "write it into the path's kustomization.yaml (an overlay) and import again")
		}
	}
	for _, k := range []string{"name", "ref"} {
		if v := o.str("spec.source." + k); v != "" {
			f(Note, "spec.source."+k, fmt.Sprintf("%q: a source name or ref only matters among multiple sources", v), "")
		}
	}

	rel.Spec.Targets, rel.Spec.Namespace = a.destination(o, prefix, f, ctx)
	if rel.Spec.Targets == nil {
		return
	}
	a.syncPolicy(o, f, &rel)
	a.ignoreDifferences(o, f, &rel)
	rel.Spec.Project = a.releaseProject(o, f)
	rel.Metadata.Labels = a.metadata(o, f)
	for _, k := range []string{"info", "revisionHistoryLimit"} {
		if o.has("spec." + k) {
			o.markUsed("spec." + k)
			f(Note, "spec."+k, "display and history settings of Argo CD: not needed by Flotilla", "")
		}
	}
	for _, field := range o.leftovers("spec") {
		f(LeftOut, field, "not converted: Flotilla has no equivalent", "see docs/import.md, or drop the setting")
	}
	a.res.Releases = append(a.res.Releases, rel)
	cluster := o.str("spec.destination.name")
	if cluster == "" {
		cluster = o.str("spec.destination.server")
	}
	a.apps = append(a.apps, appRecord{release: rel.Metadata.Name, app: o.Name, namespace: rel.Spec.Namespace, cluster: cluster, project: o.str("spec.project")})
}

// show makes a generator parameter Flotilla cannot fill readable in a message.
func show(s string) string { return strings.ReplaceAll(s, "\x00", "") }

// releasePath cleans an Argo CD path into a Flotilla one: relative, no "./" or trailing "/".
func releasePath(p string) (string, bool) {
	if strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") {
		return "", false
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			return "", false
		}
	}
	if strings.Contains(p, "{{") {
		// A Flotilla template the substitution produced: keep it as it is, minus "./".
		return strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/"), true
	}
	c := path.Clean("/" + p)
	return strings.TrimPrefix(c, "/"), true
}

// source returns the name of the Source for a repository at a revision, creating it.
func (a *argo) source(o *Object, prefix, repoURL, rev string) string {
	key := repoURL + "\x00" + rev
	if n, ok := a.sources[key]; ok {
		return n
	}
	f := func(l Level, field, msg, do string) { a.find(o, l, prefix+field, msg, do) }
	clean, hadUser := stripUserinfo(repoURL)
	if hadUser {
		f(LeftOut, "spec.source.repoURL", "the URL holds credentials: they were removed and not copied", "name credentials the hub's operator configures instead (docs/credentials.md)")
	}
	base := strings.TrimSuffix(path.Base(strings.TrimSuffix(clean, "/")), ".git")
	if i := strings.LastIndexAny(base, ":"); i >= 0 {
		base = base[i+1:]
	}
	want := base
	if rev != "" && rev != "HEAD" {
		want = base + "-" + rev
	}
	g := &v1alpha1.GitSource{URL: clean}
	switch r := strings.TrimPrefix(rev, "refs/heads/"); {
	case rev == "" || rev == "HEAD":
	case strings.HasPrefix(rev, "refs/tags/"):
		g.Tag = strings.TrimPrefix(rev, "refs/tags/")
	case commitRE.MatchString(rev):
		g.Commit = rev
		want = base + "-" + rev[:7]
	case r != rev:
		g.Branch = r
	case tagRE.MatchString(rev):
		g.Tag = rev
		f(Note, "spec.source.targetRevision", fmt.Sprintf("%q taken as a tag", rev), "if it is a branch, change tag: to branch: in "+SourcesFile)
	case semverRE.MatchString(rev) && validSemver(rev):
		g.Semver = rev
	default:
		g.Branch = rev
	}
	if u, err := url.Parse(clean); err == nil && u.Scheme == "http" {
		g.Insecure = true
		f(Note, "spec.source.repoURL", "plain http:// repository: the Source sets insecure: true", "move the repository to https:// if you can")
	}
	g.Credentials = a.credentialsFor(clean)
	s := v1alpha1.Source{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindSource, Spec: v1alpha1.SourceSpec{Git: g}}
	s.Metadata.Name = a.names.assign(v1alpha1.KindSource, sanitize(want, "source"), nil, nil, "")
	a.res.Sources = append(a.res.Sources, s)
	a.sources[key] = s.Metadata.Name
	return s.Metadata.Name
}

// clusterLabel is the value of ClusterLabel for an Argo CD destination, recorded for the
// report.
func (a *argo) clusterLabel(name, server string) string {
	var v, desc string
	switch {
	case name != "":
		v, desc = labelValue(name), fmt.Sprintf("name %q", name)
	case server == inClusterServer:
		v, desc = "in-cluster", fmt.Sprintf("server %s (Argo CD's own cluster, in-cluster)", server)
	default:
		host := server
		if u, err := url.Parse(server); err == nil && u.Host != "" {
			host = u.Host
		}
		v, desc = labelValue(strings.ReplaceAll(host, ":", "-")), fmt.Sprintf("server %s", server)
	}
	if v == "" {
		v = "unnamed"
	}
	if old, ok := a.clusters[v]; ok && old != desc && !strings.Contains(old, desc) {
		desc = old + " and " + desc
	}
	a.clusters[v] = desc
	return v
}

// destination converts spec.destination into targets and a namespace. nil targets: the
// release cannot be converted (reported).
func (a *argo) destination(o *Object, prefix string, f func(Level, string, string, string), ctx *appContext) ([]v1alpha1.Target, string) {
	name, server := o.str("spec.destination.name"), o.str("spec.destination.server")
	ns := o.str("spec.destination.namespace")
	var targets []v1alpha1.Target
	dynamic := func(s string) bool { return strings.Contains(s, "{{") || strings.ContainsRune(s, 0) }
	switch {
	case ctx != nil && ctx.selector != nil && (dynamic(name) || dynamic(server)):
		targets = []v1alpha1.Target{{Selector: *ctx.selector}}
	case dynamic(name) || dynamic(server):
		f(LeftOut, "spec.destination", fmt.Sprintf("destination %q depends on a parameter Flotilla cannot fill; the release was not converted", show(name+server)), "")
		return nil, ""
	case name == "" && server == "":
		f(LeftOut, "spec.destination", "no destination cluster; the release was not converted", "")
		return nil, ""
	default:
		v := a.clusterLabel(name, server)
		targets = []v1alpha1.Target{{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{ClusterLabel: v}}}}
	}
	switch {
	case dynamic(ns):
		f(LeftOut, "spec.destination.namespace", fmt.Sprintf("namespace %q depends on the cluster: a Flotilla release has one namespace; left unset", show(ns)), "set namespaces in the manifests, or use ${cluster_name} variables in them")
		ns = ""
	case ns != "" && len(validation.IsDNS1123Label(ns)) > 0:
		f(LeftOut, "spec.destination.namespace", fmt.Sprintf("%q is not a valid namespace name: left unset", ns), "")
		ns = ""
	}
	return targets, ns
}

// syncPolicy converts spec.syncPolicy.
func (a *argo) syncPolicy(o *Object, f func(Level, string, string, string), rel *v1alpha1.Release) {
	auto, _ := lookup(o.m, "spec.syncPolicy.automated").(map[string]any)
	if auto != nil && len(auto) == 0 {
		o.markUsed("spec.syncPolicy.automated") // automated: {}
	}
	enabled, enabledSet := o.boolean("spec.syncPolicy.automated.enabled")
	if auto == nil || (enabledSet && !enabled) {
		rel.Spec.Suspend = true
		f(Action, "spec.syncPolicy.automated", "Argo CD synced this application by hand only: the release is suspended (spec.suspend), so it takes no new revisions until you resume it",
			"remove suspend: true once you want Flotilla to deliver it; `flotilla sync RELEASE` reconciles it now")
	}
	prune, _ := o.boolean("spec.syncPolicy.automated.prune")
	selfHeal, _ := o.boolean("spec.syncPolicy.automated.selfHeal")
	rel.Spec.Prune = prune
	rel.Spec.SelfHeal = &selfHeal
	if ae, _ := o.boolean("spec.syncPolicy.automated.allowEmpty"); ae {
		f(Note, "spec.syncPolicy.automated.allowEmpty", "Flotilla applies a release that renders no objects (pruning what it had, with prune)", "")
	}
	for i, opt := range o.list("spec.syncPolicy.syncOptions") {
		s, _ := opt.(string)
		field := fmt.Sprintf("spec.syncPolicy.syncOptions[%d]", i)
		k, v, _ := strings.Cut(s, "=")
		switch {
		case k == "CreateNamespace":
			rel.Spec.CreateNamespace = strings.EqualFold(v, "true")
		case k == "ServerSideApply" || k == "RespectIgnoreDifferences":
			f(Note, field, fmt.Sprintf("%s: Flotilla always does so", s), "")
		case k == "ApplyOutOfSyncOnly":
			f(Note, field, fmt.Sprintf("%s: Flotilla's server-side apply leaves unchanged objects unchanged", s), "")
		default:
			f(LeftOut, field, fmt.Sprintf("sync option %s: no Flotilla equivalent", s), "check that the release works without it (docs/import.md lists the options)")
		}
	}
	if o.has("spec.syncPolicy.retry") {
		o.markUsed("spec.syncPolicy.retry")
		f(Note, "spec.syncPolicy.retry", "Flotilla's agent retries a failed apply with its own backoff, and again every interval", "")
	}
	if o.has("spec.syncPolicy.managedNamespaceMetadata") {
		o.markUsed("spec.syncPolicy.managedNamespaceMetadata")
		f(LeftOut, "spec.syncPolicy.managedNamespaceMetadata", "labels and annotations of the created namespace: not converted", "add a Namespace manifest with them to the path")
	}
}

// ignoreDifferences converts spec.ignoreDifferences into ignore rules and respected managers.
func (a *argo) ignoreDifferences(o *Object, f func(Level, string, string, string), rel *v1alpha1.Release) {
	for i, it := range o.list("spec.ignoreDifferences") {
		m, _ := it.(map[string]any)
		field := fmt.Sprintf("spec.ignoreDifferences[%d]", i)
		str := func(k string) string { s, _ := m[k].(string); return s }
		anyStar := func(k string) string {
			if v := str(k); v != "*" {
				return v
			}
			return ""
		}
		target := v1alpha1.IgnoreTarget{Group: anyStar("group"), Kind: anyStar("kind"), Name: anyStar("name"), Namespace: anyStar("namespace")}
		if target.Kind != "" && !kindRE.MatchString(target.Kind) {
			f(LeftOut, field+".kind", fmt.Sprintf("%q is not a kind", target.Kind), "")
			continue
		}
		var paths []string
		if ps, _ := m["jsonPointers"].([]any); len(ps) > 0 {
			for _, p := range ps {
				if s, ok := p.(string); ok && jsonPointerOK(s) {
					paths = append(paths, s)
				} else {
					f(LeftOut, field+".jsonPointers", fmt.Sprintf("%v is not a JSON pointer Flotilla accepts", p), "")
				}
			}
		}
		if len(paths) > 0 {
			rel.Spec.Ignore = append(rel.Spec.Ignore, v1alpha1.IgnoreRule{Target: target, Paths: paths})
			f(Note, field, "became an ignore rule: Flotilla sets these fields when it creates the object and never takes them back (docs/ignore.md)", "")
		}
		if jq, _ := m["jqPathExpressions"].([]any); len(jq) > 0 {
			f(LeftOut, field+".jqPathExpressions", fmt.Sprintf("%d jq expressions: Flotilla ignore rules are JSON pointers", len(jq)), "rewrite them as JSON pointers in spec.ignore")
		}
		if mgrs, _ := m["managedFieldsManagers"].([]any); len(mgrs) > 0 {
			for _, mg := range mgrs {
				if s, ok := mg.(string); ok && strings.TrimSpace(s) != "" && len(s) <= 128 && !slices.Contains(rel.Spec.RespectManagers, s) {
					rel.Spec.RespectManagers = append(rel.Spec.RespectManagers, s)
				}
			}
			f(Note, field+".managedFieldsManagers", "became spec.respectManagers, which covers every object of the release, not only the ones this entry selects", "")
		}
		for _, k := range sortedKeys(m) {
			switch k {
			case "group", "kind", "name", "namespace", "jsonPointers", "jqPathExpressions", "managedFieldsManagers":
			default:
				f(LeftOut, field+"."+k, "not converted", "")
			}
		}
		if target.Namespace != "" && len(validation.IsDNS1123Label(target.Namespace)) > 0 {
			f(LeftOut, field+".namespace", fmt.Sprintf("%q is not a namespace name", target.Namespace), "")
			if n := len(rel.Spec.Ignore); n > 0 && len(paths) > 0 {
				rel.Spec.Ignore = rel.Spec.Ignore[:n-1]
			}
		}
	}
}

// releaseProject maps the Application's project.
func (a *argo) releaseProject(o *Object, f func(Level, string, string, string)) string {
	p := o.str("spec.project")
	if p == "" || p == "default" {
		return ""
	}
	if strings.Contains(p, "{{") || strings.ContainsRune(p, 0) {
		f(LeftOut, "spec.project", fmt.Sprintf("project %q depends on a parameter Flotilla cannot fill: the release is in the platform project", show(p)), "set spec.project in "+ReleasesFile)
		return ""
	}
	if n, ok := a.projects[p]; ok {
		return n
	}
	f(LeftOut, "spec.project", fmt.Sprintf("AppProject %q is not in the input: the release is in the platform project, which allows everything", p),
		"import the AppProject too, or set spec.project to a Flotilla Project")
	return ""
}

// metadata copies valid labels and reports annotations and finalizers.
func (a *argo) metadata(o *Object, f func(Level, string, string, string)) map[string]string {
	var labels map[string]string
	lm, _ := lookup(o.m, "metadata.labels").(map[string]any)
	for _, k := range sortedKeys(lm) {
		v, _ := lm[k].(string)
		if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			f(Note, "metadata.labels."+k, "not a valid Flotilla label: not copied", "")
			continue
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	ann, _ := lookup(o.m, "metadata.annotations").(map[string]any)
	for _, k := range sortedKeys(ann) {
		switch {
		case k == "argocd.argoproj.io/sync-wave":
			f(LeftOut, "metadata.annotations."+k, fmt.Sprintf("sync wave %v of the application: Flotilla orders releases by spec.dependsOn", ann[k]), "add spec.dependsOn naming the releases of earlier waves")
		case strings.HasPrefix(k, "notifications.argoproj.io/"):
			f(LeftOut, "metadata.annotations."+k, "Argo CD notification subscription: not converted", "define a Notification (docs/notifications.md)")
		case strings.HasPrefix(k, "argocd.argoproj.io/") || strings.HasPrefix(k, "argocd-image-updater.argoproj.io/"):
			f(LeftOut, "metadata.annotations."+k, "Argo CD annotation: no Flotilla equivalent", "")
		case k == "kubectl.kubernetes.io/last-applied-configuration":
		default:
			f(Note, "metadata.annotations."+k, "annotation not copied: fleet objects have labels only", "")
		}
	}
	fins, _ := lookup(o.m, "metadata.finalizers").([]any)
	for _, fin := range fins {
		if s, _ := fin.(string); strings.HasPrefix(s, "resources-finalizer.argocd.argoproj.io") {
			f(Note, "metadata.finalizers", "cascading delete: a Release removed from the fleet prunes its objects when spec.prune is set", "")
		} else {
			f(Note, "metadata.finalizers", fmt.Sprintf("finalizer %v not converted", fin), "")
		}
	}
	return labels
}
