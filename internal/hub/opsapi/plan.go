package opsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/plan"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/textcut"
)

// PlanDeps are what POST /api/v1/plan needs of the hub: it reads the documents in force and
// the artifacts, and resolves refs of the fleet's and the sources' repositories into
// temporary checkouts; it stores nothing and serves nothing to agents. A hub without them
// (Store nil) answers 501.
type PlanDeps struct {
	Store interface {
		ListDesiredStates(ctx context.Context) ([]store.DesiredState, error)
		ListSourceStatuses(ctx context.Context) ([]store.SourceStatus, error)
	}
	Artifacts interface {
		Open(digest string) (*os.File, error)
	}
	// EnsureArtifact fetches an artifact this replica lacks from the shared store, as for
	// an agent's download; nil on a single hub.
	EnsureArtifact func(ctx context.Context, digest string) error
	Poller         interface {
		Resolve(ctx context.Context, g source.Git) (source.Resolved, error)
		Checkout(ctx context.Context, g source.Git, commit, dst string) error
	}
	// Fleet, FleetBranch and FleetPath are the hub's fleet repository (--fleet); a
	// directory there has no refs.
	Fleet, FleetBranch, FleetPath string
	// WorkDir holds the plans' temporary files.
	WorkDir string
	// Limits bound each plan; zero: plan.DefaultLimits.
	Limits plan.Limits
	// Schedule are the platform's settings the controller schedules with (the render budget).
	Schedule schedule.Options

	// slots bounds the plans computed at once, one per caller; made by planRoutes.
	slots *planSlots
}

// Bounds on a plan request: an uploaded candidate, the sources read at other refs, and the
// plans computed at once (each may check out repositories and render a fleet).
const (
	maxPlanBody    = 10 << 20
	maxPlanFiles   = 1000
	maxPlanBytes   = 8 << 20
	maxPlanSources = 20
	maxPlansAtOnce = 2
	// planResolveTimeout bounds each resolution and checkout of a ref, planDeadline the
	// whole plan: under the 30 s a hubclient.Client waits for an answer.
	planResolveTimeout = 20 * time.Second
	planDeadline       = 25 * time.Second
)

// planRoutes: POST /api/v1/plan, for any viewer. A plan changes nothing; what it shows is
// scoped to the releases the caller may view in the fleet in force, and the clusters its
// projects in force may target, so that a CI token of one team sees its releases' changes,
// and a viewer of every project sees the whole fleet's. A scoped caller may plan only a
// candidate that changes nothing outside its projects (plan.CheckCandidate): 403 otherwise.
// Plans are computed maxPlansAtOnce at a time, one per team (planSlots).
func (a *API) planRoutes() []httpapi.Route {
	if a.d.Plan.slots == nil {
		a.d.Plan.slots = newPlanSlots(maxPlansAtOnce)
	}
	return []httpapi.Route{{Pattern: "POST /api/v1/plan", Rule: httpapi.RuleView, Handler: http.HandlerFunc(a.plan)}}
}

func (a *API) plan(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), planDeadline)
	defer cancel()
	pd := a.d.Plan
	if pd.Store == nil || pd.Artifacts == nil || pd.Poller == nil {
		httpapi.WriteError(w, http.StatusNotImplemented, errors.New("plan: this hub does not compute plans"))
		return
	}
	req, err := readPlanRequest(w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpapi.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("plan request: body over %d bytes", maxPlanBody))
			return
		}
		httpapi.WriteError(w, http.StatusBadRequest, err)
		return
	}
	pr, _ := access.FromContext(r.Context())
	release, err := pd.slots.take(planCaller(pr))
	if err != nil {
		w.Header().Set("Retry-After", "5")
		httpapi.WriteError(w, http.StatusTooManyRequests, err)
		return
	}
	defer release()
	view := a.d.View()
	if view.Fleet == nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, errors.New("plan: the hub has not loaded a fleet configuration yet"))
		return
	}
	tmp, err := os.MkdirTemp(pd.WorkDir, "plan-")
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, fmt.Errorf("plan: %w", err))
		return
	}
	defer os.RemoveAll(tmp)
	p := planner{d: pd, tmp: tmp, dirs: map[string]string{}, clusters: a.d.Store.ListClusters}
	out, status, err := p.run(ctx, req, view.Fleet, view.Problems, view.Revision, a.d.Clock.Now())
	if err != nil {
		httpapi.WriteError(w, status, err)
		return
	}
	a.d.Logger.Info("plan computed", "actor", httpapi.Actor(ctx), "candidate", out.Candidate, "changes", out.Changes,
		"errors", out.Errors, "groups", len(out.Groups))
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// planner computes one plan in its temporary directory.
type planner struct {
	d   PlanDeps
	tmp string
	// dirs are the unpacked or checked-out artifacts, by digest.
	dirs map[string]string
	n    int
	// clusters lists the registered clusters.
	clusters func(ctx context.Context) ([]store.Cluster, error)
}

// run returns the plan, or an HTTP status and error.
func (p *planner) run(ctx context.Context, req hubclient.PlanRequest, inForce *v1alpha1.Fleet, problems []schedule.Problem, revision string, now time.Time) (hubclient.Plan, int, error) {
	cand, label, invalid, err := p.candidate(ctx, req)
	if err != nil {
		return hubclient.Plan{}, http.StatusBadRequest, err
	}
	if invalid != nil {
		out := hubclient.Plan{Revision: revision, Candidate: label, Errors: true, Groups: []hubclient.PlanGroup{}}
		for _, pr := range invalid.Problems {
			msg := pr.Message
			if pr.Object != "" {
				msg = pr.Object + ": " + msg
			}
			if pr.Field != "" {
				msg = strings.Replace(msg, pr.Object+": ", pr.Object+": "+pr.Field+": ", 1)
				if pr.Object == "" {
					msg = pr.Field + ": " + msg
				}
			}
			out.Problems = append(out.Problems, hubclient.PlanProblem{Kind: hubclient.PlanInvalid, File: pr.File, Line: pr.Line, Message: msg})
		}
		return out, 0, nil
	}
	for name := range req.Sources {
		if !hasSource(cand, name) {
			return hubclient.Plan{}, http.StatusBadRequest, fmt.Errorf("--source %s: the candidate has no source %q", name, name)
		}
	}
	addTenants(cand, inForce)
	// A caller scoped to some projects plans only its own change, and sees what the fleet
	// in force says is its own: never what the candidate says.
	pr, _ := access.FromContext(ctx)
	caller := callerOf(pr)
	if err := plan.CheckCandidate(inForce, cand, caller); err != nil {
		return hubclient.Plan{}, http.StatusForbidden, err
	}
	for _, name := range slices.Sorted(maps.Keys(req.Sources)) {
		if !plan.SourceAllowed(inForce, caller, name) {
			return hubclient.Plan{}, http.StatusForbidden, fmt.Errorf("plan refused: --source %s: none of your projects %s may use source %s (their spec.sources)",
				name, caller.Projects, name)
		}
	}
	arts, srcProblems, err := p.artifacts(ctx, cand, inForce, req.Sources)
	if err != nil {
		return hubclient.Plan{}, http.StatusInternalServerError, err
	}
	clusters, err := p.current(ctx)
	if err != nil {
		return hubclient.Plan{}, http.StatusInternalServerError, err
	}
	in := plan.Input{
		Candidate: cand, CandidateRevision: "plan", Clusters: clusters.list, Current: clusters.docs,
		CurrentProblems: problems, Artifacts: arts, Dir: p.dir, Now: now, Limits: p.d.Limits,
		Schedule: p.d.Schedule,
	}
	if scopePlan(&in, pr, inForce) {
		srcProblems = ownSourceProblems(srcProblems, cand, caller)
	}
	out, err := plan.Compute(ctx, in)
	if err != nil {
		return hubclient.Plan{}, http.StatusServiceUnavailable, fmt.Errorf("plan: not computed within %s: %w", planDeadline, err)
	}
	out.Revision, out.Candidate, out.Scoped = revision, label, in.Visible != nil
	if len(srcProblems) > 0 {
		out.Problems = append(srcProblems, out.Problems...)
		out.Errors = true
	}
	return out, 0, nil
}

// scopePlan makes the plan show pr what it may see by the rules in force, never by the
// candidate's: the releases of the projects pr views, their project read from inForce, and
// the clusters pr's projects in force may target. It reports whether pr is scoped.
func scopePlan(in *plan.Input, pr access.Principal, inForce *v1alpha1.Fleet) bool {
	in.InForce = inForce
	if pr.CanEverywhere(access.Viewer) {
		in.Visible, in.SeesCluster = nil, nil
		return false
	}
	in.Visible = func(_, project string) bool { return pr.Can(access.Viewer, project) }
	scope := access.NewScope(pr, inForce)
	in.SeesCluster = func(c schedule.Cluster) bool { return scope.Cluster(c.Labels) }
	return true
}

// callerOf is the principal as the plan's scope checks read it: every project, or the
// projects its grants name.
func callerOf(pr access.Principal) plan.Caller {
	if pr.CanEverywhere(access.Viewer) {
		return plan.Caller{All: true}
	}
	var c plan.Caller
	for _, g := range pr.Grants {
		for _, name := range g.Projects {
			if name = v1alpha1.ProjectOrPlatform(name); !slices.Contains(c.Projects, name) {
				c.Projects = append(c.Projects, name)
			}
		}
	}
	slices.Sort(c.Projects)
	return c
}

// ownSourceProblems keeps, of the problems of the candidate's sources, those of sources a
// release of the caller's projects reads: another team's source and its URL are not the
// caller's to see.
func ownSourceProblems(problems []hubclient.PlanProblem, cand *v1alpha1.Fleet, c plan.Caller) []hubclient.PlanProblem {
	own := map[string]bool{}
	for _, r := range cand.Releases {
		if slices.Contains(c.Projects, r.Spec.ProjectOrDefault()) {
			for _, s := range plan.ReleaseSources(r.Spec) {
				own[s] = true
			}
		}
	}
	var out []hubclient.PlanProblem
	for _, pp := range problems {
		name, _, _ := strings.Cut(strings.TrimPrefix(pp.Message, "source "), ":")
		if own[name] {
			out = append(out, pp)
		}
	}
	return out
}

type clusterState struct {
	list []schedule.Cluster
	docs map[string]desired.Document
}

// current reads the registered clusters and their documents in force.
func (p *planner) current(ctx context.Context) (clusterState, error) {
	var cs clusterState
	states, err := p.d.Store.ListDesiredStates(ctx)
	if err != nil {
		return cs, fmt.Errorf("plan: read the desired states: %w", err)
	}
	byName := map[string]store.DesiredState{}
	for _, s := range states {
		byName[s.Cluster] = s
	}
	clusters, err := p.clusters(ctx)
	if err != nil {
		return cs, fmt.Errorf("plan: list clusters: %w", err)
	}
	cs.docs = make(map[string]desired.Document, len(clusters))
	for _, c := range clusters {
		cs.list = append(cs.list, schedule.Cluster{Name: c.Name, Labels: c.Labels})
		doc := desired.Document{Assignments: []desired.Assignment{}}
		if s, ok := byName[c.Name]; ok {
			if doc, err = desired.DecodeDocument(s.Document); err != nil {
				return cs, fmt.Errorf("plan: desired state of cluster %s does not decode: %w", c.Name, err)
			}
		}
		cs.docs[c.Name] = doc
	}
	return cs, nil
}

// candidate loads the candidate: the uploaded files, or the fleet repository at a ref. An
// invalid candidate is returned as its problems, with files named as the user knows them.
func (p *planner) candidate(ctx context.Context, req hubclient.PlanRequest) (*v1alpha1.Fleet, string, *v1alpha1.InvalidError, error) {
	var invalid *v1alpha1.InvalidError
	if req.Ref == "" {
		files := make(map[string][]byte, len(req.Files))
		for name, data := range req.Files {
			files[name] = []byte(data)
		}
		f, err := v1alpha1.Parse(files)
		if errors.As(err, &invalid) {
			return nil, "upload", invalid, nil
		}
		if err != nil {
			return nil, "", nil, fmt.Errorf("candidate: %w", err)
		}
		return f, "upload", nil, nil
	}
	if st, err := os.Stat(p.d.Fleet); p.d.Fleet == "" || (err == nil && st.IsDir()) {
		return nil, "", nil, errors.New("--fleet ref:...: the hub reads its fleet from a directory, which has no refs; upload the candidate with --fleet DIR")
	}
	g := withRef(source.Git{Name: "fleet", URL: p.d.Fleet, Branch: p.d.FleetBranch, Operator: true}, req.Ref)
	dir := filepath.Join(p.tmp, "fleet")
	res, err := p.checkout(ctx, g, dir)
	if err != nil {
		return nil, "", nil, fmt.Errorf("fleet repository at %s: %w", req.Ref, err)
	}
	label := "ref " + res.Revision
	f, err := v1alpha1.LoadDir(filepath.Join(dir, filepath.FromSlash(p.d.FleetPath)))
	if errors.As(err, &invalid) {
		prefix := filepath.ToSlash(dir) + "/"
		for i := range invalid.Problems {
			invalid.Problems[i].File = strings.TrimPrefix(filepath.ToSlash(invalid.Problems[i].File), prefix)
		}
		return nil, label, invalid, nil
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("fleet repository at %s: %s", req.Ref, strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
	}
	return f, label, nil, nil
}

// withRef reads g at ref: a full commit, or a branch.
func withRef(g source.Git, ref string) source.Git {
	g.Branch, g.Tag, g.Semver, g.Commit = "", "", "", ""
	if fullCommit.MatchString(ref) {
		g.Commit = ref
	} else {
		g.Branch = ref
	}
	return g
}

var fullCommit = regexp.MustCompile(`^[0-9a-f]{40}$`)

// checkout resolves g and checks it out into dir.
func (p *planner) checkout(ctx context.Context, g source.Git, dir string) (source.Resolved, error) {
	ctx, cancel := context.WithTimeout(ctx, planResolveTimeout)
	defer cancel()
	res, err := p.d.Poller.Resolve(ctx, g)
	if err != nil {
		return res, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, err
	}
	return res, p.d.Poller.Checkout(ctx, g, res.Commit, dir)
}

// artifacts are the candidate's sources' artifacts: the one in force for a source the
// candidate leaves as it is, a temporary checkout for one it changes or that --source reads
// at another ref. Only repositories the fleet in force already reads are fetched: a
// candidate cannot make the hub fetch a URL, with its credentials, that nobody merged.
func (p *planner) artifacts(ctx context.Context, cand, inForce *v1alpha1.Fleet, refs map[string]string) (map[string]schedule.Artifact, []hubclient.PlanProblem, error) {
	statuses, err := p.d.Store.ListSourceStatuses(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("plan: read the sources' status: %w", err)
	}
	current := map[string]store.SourceStatus{}
	for _, s := range statuses {
		if s.Digest != "" {
			current[s.Name] = s
		}
	}
	known := map[string]bool{}
	forceSpec := map[string]*v1alpha1.GitSource{}
	for _, s := range inForce.Sources {
		if s.Spec.Git != nil {
			known[s.Spec.Git.URL] = true
			forceSpec[s.Metadata.Name] = s.Spec.Git
		}
	}
	arts := map[string]schedule.Artifact{}
	var problems []hubclient.PlanProblem
	for _, s := range cand.Sources {
		name, git := s.Metadata.Name, s.Spec.Git
		if git == nil {
			// Helm and OCI sources are planned at the artifact the hub holds for them.
			if st, ok := current[name]; ok && st.Digest != "" {
				arts[name] = schedule.Artifact{Source: name, URL: st.URL, Revision: st.Revision, Digest: st.Digest}
			}
			continue
		}
		ref, override := refs[name]
		if st, ok := current[name]; ok && !override && reflect.DeepEqual(forceSpec[name], git) {
			arts[name] = schedule.Artifact{Source: name, URL: st.URL, Revision: st.Revision, Digest: st.Digest}
			continue
		}
		if !known[git.URL] {
			problems = append(problems, hubclient.PlanProblem{Kind: hubclient.PlanSource, Message: fmt.Sprintf(
				"source %s: %s is not a repository of the fleet in force; a plan reads only those, so its releases are not planned", name, source.Redact(git.URL))})
			continue
		}
		g := source.Git{Name: name, URL: git.URL, Branch: git.Branch, Tag: git.Tag, Semver: git.Semver, Commit: git.Commit,
			Credentials: git.Credentials, CredentialsFile: git.CredentialsFile, Insecure: git.Insecure}
		if override {
			g = withRef(g, ref)
		}
		art, err := p.readSource(ctx, g)
		if err != nil {
			problems = append(problems, hubclient.PlanProblem{Kind: hubclient.PlanSource, Message: fmt.Sprintf("source %s: %v", name, err)})
			continue
		}
		arts[name] = art
	}
	return arts, problems, nil
}

// readSource checks g out into a temporary directory that stands for its artifact in this
// plan; the digest is the one the hub would pack, so an unchanged tree is no change.
func (p *planner) readSource(ctx context.Context, g source.Git) (schedule.Artifact, error) {
	p.n++
	dir := filepath.Join(p.tmp, fmt.Sprintf("source-%d", p.n))
	res, err := p.checkout(ctx, g, dir)
	if err != nil {
		return schedule.Artifact{}, err
	}
	digest, _, err := artifact.Pack(ctx, dir, io.Discard)
	if err != nil {
		return schedule.Artifact{}, fmt.Errorf("pack %s: %w", res.Revision, err)
	}
	p.dirs[digest] = dir
	return schedule.Artifact{Source: g.Name, URL: source.Redact(g.URL), Revision: res.Revision, Digest: digest}, nil
}

// dir returns an artifact's directory: a checkout of this plan, or the stored artifact
// unpacked (within the agent's limits) into the plan's temporary directory.
func (p *planner) dir(ctx context.Context, digest string) (string, error) {
	if d, ok := p.dirs[digest]; ok {
		return d, nil
	}
	if p.d.EnsureArtifact != nil {
		if err := p.d.EnsureArtifact(ctx, digest); err != nil {
			return "", fmt.Errorf("not on this hub replica, nor in the shared store: %w", err)
		}
	}
	f, err := p.d.Artifacts.Open(digest)
	if err != nil {
		return "", fmt.Errorf("not in the hub's artifact store: %w", err)
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	p.n++
	d := filepath.Join(p.tmp, fmt.Sprintf("artifact-%d", p.n))
	if err := artifact.Unpack(ctx, f, d, artifact.DefaultLimits()); err != nil {
		return "", err
	}
	p.dirs[digest] = d
	return d, nil
}

func hasSource(f *v1alpha1.Fleet, name string) bool {
	for _, s := range f.Sources {
		if s.Metadata.Name == name {
			return true
		}
	}
	return false
}

// addTenants adds to the candidate the releases (and the sources they read, values and
// patch files included) that projects' own fleet repositories contribute to the fleet in
// force: the candidate is the main fleet repository, and a plan of it must not read the
// tenants' releases as lost, nor (for a scoped caller's check) their sources as removed.
func addTenants(cand, inForce *v1alpha1.Fleet) {
	tenant := map[string]bool{}
	for _, pr := range cand.Projects {
		if pr.Spec.Fleet != nil {
			tenant[pr.Metadata.Name] = true
		}
	}
	if len(tenant) == 0 {
		return
	}
	have := map[string]bool{}
	for _, r := range cand.Releases {
		have[r.Metadata.Name] = true
	}
	for _, r := range inForce.Releases {
		if have[r.Metadata.Name] || !tenant[r.Spec.ProjectOrDefault()] {
			continue
		}
		cand.Releases = append(cand.Releases, r)
		for _, name := range plan.ReleaseSources(r.Spec) {
			if hasSource(cand, name) {
				continue
			}
			for _, s := range inForce.Sources {
				if s.Metadata.Name == name {
					cand.Sources = append(cand.Sources, s)
				}
			}
		}
	}
}

// planName: a source name or ref as a plan request may carry it.
var refText = regexp.MustCompile(`^[A-Za-z0-9._/@+-]{1,255}$`)

// readPlanRequest reads and checks the body.
func readPlanRequest(w http.ResponseWriter, r *http.Request) (hubclient.PlanRequest, error) {
	var req hubclient.PlanRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxPlanBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf(`plan request: want {"files": {PATH: YAML, ...}} or {"ref": BRANCH_OR_COMMIT}, with "sources": {NAME: REF}: %w`, err)
	}
	switch {
	case (len(req.Files) == 0) == (req.Ref == ""):
		return req, errors.New("plan request: give the candidate as either files or a ref of the fleet repository")
	case req.Ref != "" && (!refText.MatchString(req.Ref) || strings.HasPrefix(req.Ref, "-") || strings.Contains(req.Ref, "..")):
		return req, fmt.Errorf("plan request: ref %q: want a branch name or a full commit", textcut.Cut(req.Ref, 64))
	case len(req.Files) > maxPlanFiles:
		return req, fmt.Errorf("plan request: %d files: at most %d", len(req.Files), maxPlanFiles)
	case len(req.Sources) > maxPlanSources:
		return req, fmt.Errorf("plan request: %d sources at other refs: at most %d", len(req.Sources), maxPlanSources)
	}
	total := 0
	for name, data := range req.Files {
		total += len(data)
		ext := strings.ToLower(path.Ext(name))
		if len(name) > 512 || !filepath.IsLocal(name) || path.Clean(name) != name || strings.ContainsAny(name, "\\\x00") ||
			(ext != ".yaml" && ext != ".yml" && ext != ".json") {
			return req, fmt.Errorf("plan request: file %q: want a relative, clean path to a .yaml, .yml or .json file", textcut.Cut(name, 64))
		}
	}
	if total > maxPlanBytes {
		return req, fmt.Errorf("plan request: the files hold %d bytes: at most %d", total, maxPlanBytes)
	}
	for name, ref := range req.Sources {
		if !refText.MatchString(name) || !refText.MatchString(ref) || strings.HasPrefix(ref, "-") || strings.Contains(ref, "..") {
			return req, fmt.Errorf("plan request: source %q at %q: want NAME=BRANCH or NAME=COMMIT", textcut.Cut(name, 64), textcut.Cut(ref, 64))
		}
	}
	return req, nil
}
