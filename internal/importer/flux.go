package importer

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// FluxClusterLabel is the cluster label releases imported from Flux target: Flux applies a
// Kustomization to the cluster it runs in, so the releases of one Flux installation target
// fluxcd.io/cluster=NAME, and the user puts that label on the cluster.
const FluxClusterLabel = "fluxcd.io/cluster"

// FluxOptions tune the Flux conversion.
type FluxOptions struct {
	// Cluster is the value of FluxClusterLabel the releases target.
	Cluster string
}

type flux struct {
	res      *Result
	opts     FluxOptions
	names    *names
	sources  map[string]string // namespace/name of a GitRepository -> Source name
	other    map[string]string // namespace/name of a source kind Flotilla lacks -> kind
	releases map[string]string // namespace/name of a converted Kustomization -> Release name
	creds    map[string]string // namespace/name of a Secret -> credentials name
}

// Flux converts Flux objects into a fleet. Objects of other kinds are reported.
func Flux(objs []*Object, opts FluxOptions) *Result {
	x := &flux{res: &Result{Tool: "flux"}, opts: opts, names: newNames(), sources: map[string]string{},
		other: map[string]string{}, releases: map[string]string{}, creds: map[string]string{}}
	if x.opts.Cluster == "" {
		x.opts.Cluster = "default"
	}
	const src, ks, helm = "source.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io"
	for _, o := range objs {
		if o.Group() == src {
			x.source(o)
		}
	}
	type pending struct {
		o    *Object
		rel  int
		deps []any
	}
	var deps []pending
	for _, o := range objs {
		if o.Group() == ks && o.Kind == "Kustomization" {
			if i, d := x.kustomization(o); i >= 0 {
				deps = append(deps, pending{o, i, d})
			}
		}
	}
	for _, p := range deps {
		for i, d := range p.deps {
			m, _ := d.(map[string]any)
			name, _ := m["name"].(string)
			ns, _ := m["namespace"].(string)
			if ns == "" {
				ns = p.o.Namespace
			}
			spec := &x.res.Releases[p.rel].Spec
			if r, ok := x.releases[ns+"/"+name]; ok {
				if r != x.res.Releases[p.rel].Metadata.Name && !slices.Contains(spec.DependsOn, r) {
					spec.DependsOn = append(spec.DependsOn, r)
				}
			} else {
				x.find(p.o, LeftOut, fmt.Sprintf("spec.dependsOn[%d]", i), fmt.Sprintf("Kustomization %s/%s is not among the converted ones: the dependency was dropped", ns, name), "import it too, or set spec.dependsOn by hand")
			}
		}
	}
	x.breakCycles()
	for _, o := range objs {
		switch {
		case o.Group() == src, o.Group() == ks && o.Kind == "Kustomization":
		case o.Group() == helm && o.Kind == "HelmRelease":
			x.helmRelease(o)
		case o.Kind == "Secret" && o.APIVersion == "v1":
			x.secret(o)
		case strings.HasSuffix(o.Group(), ".toolkit.fluxcd.io"):
			do := ""
			switch o.Group() {
			case "notification.toolkit.fluxcd.io":
				do = "Alerts and Providers become a Notification (docs/notifications.md); a Receiver becomes the hub's webhook (docs/webhooks.md)"
			case "image.toolkit.fluxcd.io":
				do = "keep Flux's image automation writing to Git: Flotilla delivers what it commits"
			}
			x.find(o, LeftOut, "", fmt.Sprintf("%s is not converted", o.Kind), do)
		default:
			reportHooks(&x.res.Report, o)
			x.find(o, Note, "", fmt.Sprintf("%s is not a Flux object: not converted", o.APIVersion), "")
		}
	}
	x.res.Report.add(Finding{Level: Action, Message: fmt.Sprintf("releases target the cluster Flux ran in by the cluster label %s=%s", FluxClusterLabel, x.opts.Cluster),
		Do: fmt.Sprintf("label that cluster: flotilla cluster label CLUSTER %s=%s (or import again with --cluster NAME)", FluxClusterLabel, x.opts.Cluster)})
	x.res.Report.sort()
	return x.res
}

func (x *flux) find(o *Object, l Level, field, msg, do string) {
	x.res.Report.add(Finding{Level: l, File: o.File, Object: o.ID(), Field: field, Message: msg, Do: do})
}

func key(o *Object) string { return o.Namespace + "/" + o.Name }

// duration reads a Flux duration ("1m0s", "10m"); ok false when set and unreadable.
func (x *flux) duration(o *Object, field string) (v1alpha1.Duration, bool) {
	s := o.str(field)
	if s == "" {
		return v1alpha1.Duration{}, true
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		x.find(o, LeftOut, field, fmt.Sprintf("%q is not a duration: left unset", s), "")
		return v1alpha1.Duration{}, false
	}
	return v1alpha1.Duration{Duration: d}, true
}

// source converts a GitRepository; the other source kinds are reported.
func (x *flux) source(o *Object) {
	if o.Kind != "GitRepository" {
		x.other[key(o)] = o.Kind
		do := "keep it in Flux for now, or push its content to Git"
		if o.Kind == "HelmRepository" || o.Kind == "HelmChart" {
			do = "Helm releases come with a later Flotilla release: keep them in Flux, or render the chart into Git with helm template"
		}
		x.find(o, LeftOut, "", fmt.Sprintf("%s is not a Flotilla source kind yet: not converted", o.Kind), do)
		return
	}
	raw := o.str("spec.url")
	if raw == "" {
		x.find(o, LeftOut, "spec.url", "no url: the GitRepository was not converted", "")
		return
	}
	clean, hadUser := stripUserinfo(raw)
	if hadUser {
		x.find(o, LeftOut, "spec.url", "the URL holds credentials: they were removed and not copied", "name credentials the hub's operator configures instead (docs/credentials.md)")
	}
	g := &v1alpha1.GitSource{URL: clean}
	refs := []struct {
		field string
		set   *string
	}{{"commit", &g.Commit}, {"name", nil}, {"semver", &g.Semver}, {"tag", &g.Tag}, {"branch", &g.Branch}}
	taken := ""
	for _, r := range refs {
		v := o.str("spec.ref." + r.field)
		if v == "" {
			continue
		}
		switch {
		case taken != "":
			x.find(o, Note, "spec.ref."+r.field, fmt.Sprintf("%q: Flux follows ref.%s first, and so does the Source", v, taken), "")
		case r.set == nil:
			x.find(o, LeftOut, "spec.ref.name", fmt.Sprintf("Git reference %q: a Flotilla source follows a branch, tag, semver range or commit", v), "use one of those")
		default:
			*r.set = strings.TrimPrefix(v, "refs/heads/")
			taken = r.field
		}
	}
	if taken == "" && !o.has("spec.ref.name") {
		// Flux's API: "defaults to the 'master' branch"; a Flotilla source without a ref
		// follows the remote's HEAD instead.
		g.Branch = "master"
		x.find(o, Note, "spec.ref", "no ref: Flux follows the master branch, and so does the Source", "")
	}
	if u, err := url.Parse(clean); err == nil && u.Scheme == "http" {
		g.Insecure = true
		x.find(o, Note, "spec.url", "plain http:// repository: the Source sets insecure: true", "move the repository to https:// if you can")
	}
	s := v1alpha1.Source{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindSource, Spec: v1alpha1.SourceSpec{Git: g}}
	if iv, ok := x.duration(o, "spec.interval"); ok {
		if iv.Duration != 0 && iv.Duration < v1alpha1.MinSourceInterval {
			x.find(o, Note, "spec.interval", fmt.Sprintf("%v is below Flotilla's minimum: %v", iv.Duration, v1alpha1.MinSourceInterval), "")
			iv.Duration = v1alpha1.MinSourceInterval
		}
		s.Spec.Interval = iv
	}
	s.Metadata.Name = x.names.assign(v1alpha1.KindSource, o.Name, &x.res.Report, o, "metadata.name")
	if sec := o.str("spec.secretRef.name"); sec != "" {
		k := o.Namespace + "/" + sec
		name, ok := x.creds[k]
		if !ok {
			name = x.names.assign("Credentials", sec, nil, nil, "")
			x.creds[k] = name
		}
		g.Credentials = name
		_, host := normalRepoURL(clean)
		x.find(o, Action, "spec.secretRef", fmt.Sprintf("Secret %s became credentials %q; its values were not read or copied", k, name),
			fmt.Sprintf("write a credentials file from the Secret (username:/password:, or bearerToken as token:, or identity as sshPrivateKey: with known_hosts as sshKnownHosts:) and add it to the hub's --credentials-config: credentials: {%s: {file: %s.creds, hosts: [%s]}} (docs/credentials.md)", name, name, host))
	}
	for _, k := range []struct {
		field, msg, do string
		l              Level
	}{
		{"spec.timeout", "fetch timeout: the hub bounds fetches itself", "", Note},
		{"spec.ignore", ".sourceignore rules: the artifact holds the whole repository, and a release renders only its path", "keep other files out of the release's path", LeftOut},
		{"spec.include", "included repositories: not converted", "make each included repository a Source of its own", LeftOut},
		{"spec.verify", "commit signature verification: not converted", "", LeftOut},
		{"spec.recurseSubmodules", "submodules: not fetched by Flotilla", "", LeftOut},
		{"spec.proxySecretRef", "proxy: not converted", "", LeftOut},
		{"spec.provider", "cloud provider authentication: not converted", "use token or SSH credentials (docs/credentials.md)", LeftOut},
		{"spec.suspend", "a suspended source: Flotilla sources have no suspend", "suspend its releases instead (spec.suspend)", LeftOut},
		{"spec.sparseCheckout", "sparse checkout: the hub fetches the whole repository", "", Note},
	} {
		if o.has(k.field) {
			o.markUsed(k.field)
			x.find(o, k.l, k.field, k.msg, k.do)
		}
	}
	for _, field := range o.leftovers("spec") {
		x.find(o, LeftOut, field, "not converted: Flotilla has no equivalent", "see docs/import.md")
	}
	x.res.Sources = append(x.res.Sources, s)
	x.sources[key(o)] = s.Metadata.Name
}

var variableRE = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)

// kustomization converts a Kustomization into a Release; it returns the release's index and
// its raw dependsOn, or -1 when it was not converted.
func (x *flux) kustomization(o *Object) (int, []any) {
	f := func(l Level, field, msg, do string) { x.find(o, l, field, msg, do) }
	kind, name, ns := o.str("spec.sourceRef.kind"), o.str("spec.sourceRef.name"), o.str("spec.sourceRef.namespace")
	if ns == "" {
		ns = o.Namespace
	}
	o.markUsed("spec.sourceRef")
	src, ok := x.sources[ns+"/"+name]
	if kind != "GitRepository" || !ok {
		what := fmt.Sprintf("source %s %s/%s is not in the input", kind, ns, name)
		if k, other := x.other[ns+"/"+name]; other && (kind == k || kind == "") {
			what = fmt.Sprintf("source %s %s/%s is not a Flotilla source kind yet", k, ns, name)
		}
		f(LeftOut, "spec.sourceRef", what+": the Kustomization was not converted", "import its GitRepository too")
		return -1, nil
	}
	p, okPath := releasePath(strings.TrimPrefix(o.str("spec.path"), "./"))
	if !okPath {
		f(LeftOut, "spec.path", fmt.Sprintf("path %q must be relative and without \"..\": the Kustomization was not converted", o.str("spec.path")), "")
		return -1, nil
	}
	rel := v1alpha1.Release{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindRelease}
	rel.Metadata.Name = x.names.assign(v1alpha1.KindRelease, o.Name, &x.res.Report, o, "metadata.name")
	s := &rel.Spec
	s.Source, s.Path = src, path.Clean("/" + p)[1:]
	s.Targets = []v1alpha1.Target{{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{FluxClusterLabel: labelValue(x.opts.Cluster)}}}}
	s.Prune, _ = o.boolean("spec.prune")
	s.Wait, _ = o.boolean("spec.wait")
	s.Suspend, _ = o.boolean("spec.suspend")
	if d, ok := x.duration(o, "spec.interval"); ok {
		s.Interval = d
	}
	if d, ok := x.duration(o, "spec.timeout"); ok {
		s.Timeout = d
	}
	if tn := o.str("spec.targetNamespace"); tn != "" {
		if len(validation.IsDNS1123Label(tn)) > 0 {
			f(LeftOut, "spec.targetNamespace", fmt.Sprintf("%q is not a namespace name", tn), "")
		} else {
			s.Namespace = tn
			f(Note, "spec.targetNamespace", "became spec.namespace, which Flotilla gives only to namespaced objects without a namespace (Flux overrides every object's namespace)", "remove namespaces from the manifests where Flux overrode them")
		}
	}
	for _, k := range sortedKeys(o.mapAt("spec.postBuild.substitute")) {
		v := lookup(o.m, "spec.postBuild.substitute."+k)
		field := "spec.postBuild.substitute." + k
		switch {
		case !variableRE.MatchString(k) || k == v1alpha1.ClusterNameVariable:
			f(LeftOut, field, fmt.Sprintf("variable %q cannot be a Flotilla variable", k), "rename it in the manifests")
		default:
			if s.Variables == nil {
				s.Variables = map[string]string{}
			}
			s.Variables[k] = fmt.Sprint(v)
		}
	}
	for i, it := range o.list("spec.postBuild.substituteFrom") {
		m, _ := it.(map[string]any)
		f(LeftOut, fmt.Sprintf("spec.postBuild.substituteFrom[%d]", i), fmt.Sprintf("variables from %v %v in the cluster: Flotilla's variables are in the release and the cluster's labels", m["kind"], m["name"]),
			"copy the ConfigMap's values into spec.variables, or make per-cluster values cluster labels (${cluster_label_<key>}); keep secrets out of variables")
	}
	deps := o.list("spec.dependsOn")
	for _, k := range []struct {
		field, msg, do string
		l              Level
	}{
		{"spec.retryInterval", "Flotilla's agent retries with its own backoff", "", Note},
		{"spec.force", "force (re-create on immutable field changes): Flotilla never re-creates objects", "change immutable fields by renaming the object", LeftOut},
		{"spec.healthChecks", "health checks of named objects: wait: true checks every object of the release", "set wait: true", LeftOut},
		{"spec.healthCheckExprs", "custom health expressions: not converted", "", LeftOut},
		{"spec.serviceAccountName", "impersonation: Flotilla impersonates a Project's ServiceAccount", "put the release in a Project with spec.serviceAccount (docs/projects.md)", LeftOut},
		{"spec.kubeConfig", "a remote cluster: Flotilla's agent runs in each cluster", "target that cluster with its own label", LeftOut},
		{"spec.decryption", "SOPS decryption: Flotilla does not decrypt manifests", "deliver the Secrets another way (an external secrets operator)", LeftOut},
		{"spec.patches", "patches: Flotilla builds the kustomization as it is in Git", "move them into the path's kustomization.yaml", LeftOut},
		{"spec.images", "image overrides: not converted", "move them into the path's kustomization.yaml", LeftOut},
		{"spec.namePrefix", "not converted", "move it into the path's kustomization.yaml", LeftOut},
		{"spec.nameSuffix", "not converted", "move it into the path's kustomization.yaml", LeftOut},
		{"spec.components", "not converted", "move them into the path's kustomization.yaml", LeftOut},
		{"spec.commonMetadata", "not converted", "move it into the path's kustomization.yaml (labels, commonAnnotations)", LeftOut},
		{"spec.deletionPolicy", "deletion policy: a Release removed from the fleet prunes its objects when spec.prune is set", "", LeftOut},
	} {
		if o.has(k.field) {
			o.markUsed(k.field)
			f(k.l, k.field, k.msg, k.do)
		}
	}
	for _, field := range o.leftovers("spec") {
		f(LeftOut, field, "not converted: Flotilla has no equivalent", "see docs/import.md")
	}
	x.releases[key(o)] = rel.Metadata.Name
	x.res.Releases = append(x.res.Releases, rel)
	return len(x.res.Releases) - 1, deps
}

// helmRelease reports a HelmRelease with what it would take to convert it.
func (x *flux) helmRelease(o *Object) {
	chart := o.str("spec.chart.spec.chart")
	version := o.str("spec.chart.spec.version")
	if chart == "" {
		chart = fmt.Sprintf("%s %s", o.str("spec.chartRef.kind"), o.str("spec.chartRef.name"))
	}
	values := len(o.mapAt("spec.values"))
	from := len(o.list("spec.valuesFrom"))
	rn := o.str("spec.releaseName")
	if rn == "" {
		rn = o.Name
	}
	x.find(o, LeftOut, "spec.chart", fmt.Sprintf("Helm release of chart %s %s with %d top-level values and %d valuesFrom: Flotilla has no Helm releases yet (a later release adds them)", chart, version, values, from),
		fmt.Sprintf("keep it in Flux's helm-controller for now; or render it into Git (helm template %s CHART --version %s -f values.yaml), make a Release of that directory, and give it spec.adopt {fromManagers: [helm-controller], helmRelease: %s} to take the live objects over", rn, version, rn))
}

// secret reports a Secret without reading its values.
func (x *flux) secret(o *Object) {
	o.markUsed("data", "stringData")
	if name, ok := x.creds[key(o)]; ok {
		x.find(o, Note, "", fmt.Sprintf("credentials %q: the Secret's values were not read or copied", name), "")
		return
	}
	x.find(o, Note, "", "Secret: not read", "")
}

// breakCycles drops dependsOn edges that close a cycle (Flux would never become ready on
// one; the hub refuses it), each with a report line.
func (x *flux) breakCycles() {
	index := map[string]int{}
	for i, r := range x.res.Releases {
		index[r.Metadata.Name] = i
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(x.res.Releases))
	var visit func(i int)
	visit = func(i int) {
		state[i] = onPath
		spec := &x.res.Releases[i].Spec
		kept := spec.DependsOn[:0]
		for _, d := range spec.DependsOn {
			j := index[d]
			if state[j] == onPath {
				x.res.Report.add(Finding{Level: LeftOut, Object: "Release/" + x.res.Releases[i].Metadata.Name, Field: "spec.dependsOn",
					Message: fmt.Sprintf("dependsOn %s closes a cycle: dropped", d), Do: "fix the order of the Kustomizations"})
				continue
			}
			if state[j] == unseen {
				visit(j)
			}
			kept = append(kept, d)
		}
		spec.DependsOn = kept
		if len(kept) == 0 {
			spec.DependsOn = nil
		}
		state[i] = done
	}
	for i := range x.res.Releases {
		if state[i] == unseen {
			visit(i)
		}
	}
}
