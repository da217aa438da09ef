package v1alpha1

import (
	"fmt"
)

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
			if s.Metadata.Name == name && s.Spec.Git != nil {
				return s.Spec.Git.URL
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
//   - every Source has a URL that one of the project's URL patterns matches (a name the
//     tenant chose proves nothing), no credentialsFile (a file on the hub), and no
//     credentials but those the project's fleet names.
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
		g := s.Spec.Git
		if g == nil {
			continue
		}
		if g.URL != "" && !spec.AllowsSourceURL(g.URL) {
			add("spec.git.url", fmt.Sprintf("project %s does not allow this URL: no URL pattern of its spec.sources matches it", project))
		}
		if g.CredentialsFile != "" {
			add("spec.git.credentialsFile", "a tenant fleet cannot read files on the hub; name credentials the hub's operator configured")
		}
		if g.Credentials != "" && (spec.Fleet == nil || g.Credentials != spec.Fleet.Credentials) {
			add("spec.git.credentials", fmt.Sprintf("project %s does not allow credentials %q: a tenant's sources may use only the credentials its Project's spec.fleet names", project, g.Credentials))
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
		if ns := r.Spec.Namespace; ns != "" && !spec.AllowsNamespace(ns) {
			add("spec.namespace", fmt.Sprintf("project %s does not allow namespace %q (spec.namespaces)", project, ns))
		}
	}
}
