package v1alpha1

import (
	"fmt"
	"time"
)

// MaxTenantSources bounds the Sources one tenant fleet repository may define: each is polled
// and fetched by the hub on the platform's behalf.
const MaxTenantSources = 20

// MinTenantSourceInterval is the shortest poll interval a tenant's Source may ask for: a
// team's sources are polled less eagerly than the platform's (MinSourceInterval), so that a
// team cannot turn the hub against a registry or Git server (or spend its time).
const MinTenantSourceInterval = time.Minute

// Tenant is what a tenant's fleet repository is checked against: the Project it belongs to,
// and the names already taken by the main fleet and the other tenants.
type Tenant struct {
	Project Project
	// Sources of the main fleet, which the tenant's releases may use where the project
	// allows them.
	Sources []Source
	// Taken are the Source and Release names defined elsewhere, by kind ("Source/web") and
	// with who defines them ("the main fleet", "project team-b's fleet repository"): a
	// tenant cannot redefine them.
	Taken map[string]string
}

func (t *Tenant) hasSource(name string) bool {
	if t == nil {
		return false
	}
	for _, s := range t.Sources {
		if s.Metadata.Name == name {
			return true
		}
	}
	return false
}

func (t *Tenant) sourceURL(own []Source, name string) string {
	for _, list := range [][]Source{own, t.Sources} {
		for _, s := range list {
			if s.Metadata.Name == name {
				return SourceURL(s.Spec)
			}
		}
	}
	return ""
}

// ParseTenant is [Parse] for a tenant's fleet repository, which holds that team's Sources and
// Releases and nothing else. On top of what Parse checks, every object must keep within the
// tenant's Project:
//   - no Project, Notification or Window objects;
//   - no Source or Release name that t.Taken holds;
//   - every Release belongs to the project (spec.project unset means the project, and is set
//     so in the returned fleet);
//   - every Release uses a source of the repository or of the main fleet that the project
//     allows, and a default namespace, when it sets one, that the project allows;
//   - every file a Release names in another source (Helm values files, post-render patch
//     files: [ReleaseSpec.FileSourceRefs]) is in a source the project allows;
//   - every Source, Git, Helm or OCI, has a URL that one of the project's URL patterns
//     matches ([SourceURL]; a name the tenant chose proves nothing), no credentialsFile (a
//     file on the hub), and no credentials but those the project's fleet names;
//   - at most [MaxTenantSources] Sources, each polled no more often than
//     [MinTenantSourceInterval].
//
// Any problem rejects the whole repository's configuration.
func ParseTenant(files map[string][]byte, t Tenant) (*Fleet, error) {
	f, err := parseFleet(files, &t)
	if err != nil {
		return nil, err
	}
	for i := range f.Releases {
		if f.Releases[i].Spec.Project == "" {
			f.Releases[i].Spec.Project = t.Project.Metadata.Name
		}
	}
	return f, nil
}

// LoadTenantDir is [LoadDir] for a tenant's fleet repository: see [ParseTenant].
func LoadTenantDir(dir string, t Tenant) (*Fleet, error) {
	files, err := readFleetFiles(dir)
	if err != nil {
		return nil, err
	}
	return ParseTenant(files, t)
}

// tenant checks a tenant fleet against its project.
func (v *validator) tenant(f *Fleet, t *Tenant) {
	project := t.Project.Metadata.Name
	spec := t.Project.Spec
	only := fmt.Sprintf("a tenant fleet repository holds only Sources and Releases of project %s", project)
	for i := range f.Projects {
		_, add := v.object(KindProject, i, f.Projects[i].Metadata.Name)
		add("", only+"; Projects are defined in the main fleet")
	}
	for i := range f.Notifications {
		_, add := v.object(KindNotification, i, f.Notifications[i].Metadata.Name)
		add("", only+"; Notifications are defined in the main fleet")
	}
	for i := range f.Windows {
		_, add := v.object(KindWindow, i, f.Windows[i].Metadata.Name)
		add("", only+"; Windows are defined in the main fleet (a team holds back its own releases with spec.suspend)")
	}
	for i := range f.Sources {
		s := &f.Sources[i]
		_, add := v.object(KindSource, i, s.Metadata.Name)
		if who, ok := t.Taken[KindSource+"/"+s.Metadata.Name]; ok {
			add("metadata.name", fmt.Sprintf("Source %q is already defined by %s; choose another name", s.Metadata.Name, who))
		}
		if i == MaxTenantSources {
			add("", fmt.Sprintf("a tenant fleet repository may define at most %d Sources; this is Source number %d", MaxTenantSources, i+1))
		}
		if d := s.Spec.Interval.Duration; d != 0 && d < MinTenantSourceInterval {
			add("spec.interval", fmt.Sprintf("must be at least %v in a tenant fleet repository, not %v", MinTenantSourceInterval, d))
		}
		var field, url, creds string
		switch {
		case s.Spec.Git != nil:
			g := s.Spec.Git
			field, url, creds = "spec.git", g.URL, g.Credentials
		case s.Spec.Helm != nil:
			field, url, creds = "spec.helm", SourceURL(s.Spec), s.Spec.Helm.Credentials
			if len(s.Spec.Helm.DependencyHosts) > 0 {
				add("spec.helm.dependencyHosts", "a tenant's chart dependencies are fetched from its repository's own host only (or vendored in charts/); only the main fleet may name other hosts")
			}
		case s.Spec.OCI != nil:
			field, url, creds = "spec.oci", s.Spec.OCI.URL, s.Spec.OCI.Credentials
		default:
			continue
		}
		if url != "" && !spec.AllowsSourceURL(url) {
			urlField := field + ".url"
			what := "this URL"
			if s.Spec.Helm != nil {
				urlField, what = "spec.helm.repository", fmt.Sprintf("chart %s", url)
			}
			add(urlField, fmt.Sprintf("project %s does not allow %s: no URL pattern of its spec.sources matches it", project, what))
		}
		if s.Spec.Git != nil && s.Spec.Git.CredentialsFile != "" {
			add("spec.git.credentialsFile", "a tenant fleet cannot read files on the hub; name credentials the hub's operator configured")
		}
		if creds != "" && (spec.Fleet == nil || creds != spec.Fleet.Credentials) {
			add(field+".credentials", fmt.Sprintf("project %s does not allow credentials %q: a tenant's sources may use only the credentials its Project's spec.fleet names", project, creds))
		}
	}
	for i := range f.Releases {
		r := &f.Releases[i]
		_, add := v.object(KindRelease, i, r.Metadata.Name)
		if who, ok := t.Taken[KindRelease+"/"+r.Metadata.Name]; ok {
			add("metadata.name", fmt.Sprintf("Release %q is already defined by %s; choose another name", r.Metadata.Name, who))
		}
		if p := r.Spec.Project; p != "" && p != project {
			add("spec.project", fmt.Sprintf("the release belongs to project %q, but this is the fleet repository of project %s: it may hold only %s's releases", p, project, project))
			continue
		}
		if r.Spec.Source != "" && !spec.AllowsSource(r.Spec.Source, t.sourceURL(f.Sources, r.Spec.Source)) {
			add("spec.source", fmt.Sprintf("project %s does not allow source %q (spec.sources)", project, r.Spec.Source))
		}
		for _, ref := range r.Spec.FileSourceRefs() {
			if why := spec.RefusedSourceRef(project, ref.Source, t.sourceURL(f.Sources, ref.Source)); why != "" {
				add(ref.Field, why)
			}
		}
		if ns := r.Spec.Namespace; ns != "" && !spec.AllowsNamespace(ns) {
			add("spec.namespace", fmt.Sprintf("project %s does not allow namespace %q (spec.namespaces)", project, ns))
		}
	}
}
