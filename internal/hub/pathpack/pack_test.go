package pathpack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/render"
)

// fleetTree is a fleet repository: a shared base and one directory per cluster.
var fleetTree = map[string]string{
	"base/kustomization.yaml":       "resources:\n- cm.yaml\n",
	"base/cm.yaml":                  cm("base"),
	"clusters/a/kustomization.yaml": "resources:\n- ../../base\n- own.yaml\n",
	"clusters/a/own.yaml":           cm("a"),
	"clusters/b/kustomization.yaml": "resources:\n- ../../base\n- own.yaml\n",
	"clusters/b/own.yaml":           cm("b"),
	"values/prod.yaml":              "replicas: 3\n",
}

// putSource packs files as a source artifact into store.
func putSource(t *testing.T, store *artifact.Store, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	d, _, err := store.PutDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newPacker(t *testing.T) (*Packer, *artifact.Store, *[]string) {
	t.Helper()
	store, err := artifact.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var shared []string
	p := New(Options{Store: store, WorkDir: t.TempDir(), Share: func(_ context.Context, d string) error {
		shared = append(shared, d)
		return nil
	}})
	t.Cleanup(p.Close)
	return p, store, &shared
}

// unpackedFiles lists the regular files of the artifact digest.
func unpackedFiles(t *testing.T, store *artifact.Store, digest string) []string {
	t.Helper()
	f, err := store.Open(digest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	if err := artifact.Unpack(context.Background(), f, dir, artifact.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	entries, err := render.Closure(context.Background(), dir, ".", render.DefaultClosureLimits())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if fi, err := os.Lstat(dir + "/" + e); err == nil && !fi.IsDir() {
			out = append(out, e)
		}
	}
	return out
}

func TestNarrow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, store, shared := newPacker(t)
	src := putSource(t, store, fleetTree)

	a, err := p.Narrow(ctx, src, "clusters/a")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := unpackedFiles(t, store, a), []string{"base/cm.yaml", "base/kustomization.yaml", "clusters/a/kustomization.yaml", "clusters/a/own.yaml"}; !slices.Equal(got, want) {
		t.Errorf("artifact of clusters/a holds %v, want %v (its directory and the base, no other cluster's)", got, want)
	}
	if !slices.Equal(*shared, []string{a}) {
		t.Errorf("shared %v, want the new artifact %s shared before it is returned", *shared, a)
	}
	if again, _ := p.Narrow(ctx, src, "clusters/a"); again != a {
		t.Errorf("Narrow again = %s, want %s", again, a)
	}
	if self, _ := p.Narrow(ctx, a, "clusters/a"); self != a {
		t.Errorf("Narrow of a per-path artifact and its path = %s, want itself %s", self, a)
	}

	// A fresh packer (a restarted hub) computes the same digest: nothing needs storing.
	p2, _, _ := newPacker(t)
	p2.o.Store = store
	if d, _ := p2.Narrow(ctx, src, "clusters/a"); d != a {
		t.Errorf("packing again gives %s, want %s", d, a)
	}

	// A new revision that changes only cluster b: a's artifact is the same one.
	next := map[string]string{}
	for k, v := range fleetTree {
		next[k] = v
	}
	next["clusters/b/own.yaml"] = cm("b2")
	src2 := putSource(t, store, next)
	a2, _ := p.Narrow(ctx, src2, "clusters/a")
	b1, _ := p.Narrow(ctx, src, "clusters/b")
	b2, _ := p.Narrow(ctx, src2, "clusters/b")
	if a2 != a {
		t.Errorf("a commit touching only clusters/b changed the artifact of clusters/a: %s -> %s", a, a2)
	}
	if b2 == b1 {
		t.Errorf("a commit touching clusters/b left its artifact at %s", b1)
	}

	v, _ := p.Narrow(ctx, src, "values/prod.yaml")
	if got := unpackedFiles(t, store, v); !slices.Equal(got, []string{"values/prod.yaml"}) {
		t.Errorf("artifact of a values file holds %v, want that file alone", got)
	}
}

func TestNarrowUnpacksOncePerRevisionAndForgets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, store, _ := newPacker(t)
	src := putSource(t, store, fleetTree)
	for _, path := range []string{"clusters/a", "clusters/b", "base"} {
		if _, err := p.Narrow(ctx, src, path); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Unpacked(); !slices.Equal(got, []string{src}) {
		t.Errorf("unpacked %v, want the source once", got)
	}
	p.End()
	if got := p.Unpacked(); !slices.Equal(got, []string{src}) {
		t.Errorf("after a round that used it: unpacked %v, want the source kept", got)
	}
	p.End() // a round that asked for nothing
	if got := p.Unpacked(); len(got) != 0 {
		t.Errorf("after a round that did not use it: unpacked %v, want none", got)
	}
	if _, err := p.Narrow(ctx, src, "clusters/a"); err != nil || len(p.Unpacked()) != 1 {
		t.Errorf("a forgotten (source, path) is packed again from the source: %v, unpacked %v", err, p.Unpacked())
	}
}

func TestNarrowFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, store, _ := newPacker(t)
	if _, err := p.Narrow(ctx, "sha256:"+strings.Repeat("0", 64), "x"); err == nil || !strings.Contains(err.Error(), "artifact sha256:000") {
		t.Errorf("Narrow of a missing artifact = %v, want an error naming it", err)
	}
	src := putSource(t, store, fleetTree)
	p.o.Limits = render.ClosureLimits{MaxEntries: 2, MaxBytes: 1 << 20, MaxKustomizations: 10, MaxDepth: 10}
	_, err := p.Narrow(ctx, src, "clusters/a")
	var le *render.ClosureLimitError
	if !errors.As(err, &le) {
		t.Errorf("Narrow over the limits = %v, want a LimitError", err)
	}
	p.o.Limits = render.DefaultClosureLimits()
	p.o.Share = func(context.Context, string) error { return errors.New("shared store down") }
	if _, err := p.Narrow(ctx, src, "clusters/b"); err == nil || !strings.Contains(err.Error(), "shared store down") {
		t.Errorf("Narrow when sharing fails = %v, want that error (never assigned unshared)", err)
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, store, _ := newPacker(t)
	tree := map[string]string{}
	for k, v := range fleetTree {
		tree[k] = v
	}
	for i := range 10 {
		tree[fmt.Sprintf("clusters/big/%d.yaml", i)] = cm(fmt.Sprint(i))
	}
	src := putSource(t, store, tree)
	p.o.Limits.MaxEntries = 8 // clusters/a has 6 entries, clusters/big 11
	fleet := &v1alpha1.Fleet{
		Sources: []v1alpha1.Source{{Metadata: v1alpha1.ObjectMeta{Name: "git"}}, {Metadata: v1alpha1.ObjectMeta{Name: "chart"}, Spec: v1alpha1.SourceSpec{Helm: &v1alpha1.HelmSource{}}}},
		Releases: []v1alpha1.Release{
			{Metadata: v1alpha1.ObjectMeta{Name: "apps"}},
			{Metadata: v1alpha1.ObjectMeta{Name: "canary"}, Spec: v1alpha1.ReleaseSpec{Rollout: &v1alpha1.Rollout{}}},
			{Metadata: v1alpha1.ObjectMeta{Name: "web"}},
			{Metadata: v1alpha1.ObjectMeta{Name: "broken"}},
			{Metadata: v1alpha1.ObjectMeta{Name: "old"}},
		},
	}
	chart := "sha256:" + strings.Repeat("c", 64)
	absent := "sha256:" + strings.Repeat("a", 64) // packed by another replica: left as it is
	helm := &desired.Helm{ValuesFiles: []desired.FileRef{{Source: "git", Revision: "r1", Digest: src, Path: "values/prod.yaml"}}}
	plan := schedule.Plan{Assignments: map[string][]desired.Assignment{
		"a": {
			{Release: "apps", Source: "git", Revision: "r1", Digest: src, Path: "clusters/a"},
			{Release: "broken", Source: "git", Revision: "r1", Digest: src, Path: "clusters/big"},
			{Release: "canary", Source: "git", Revision: "r1", Digest: src, Path: "clusters/a"},
			{Release: "web", Source: "chart", Revision: "1.0.0", Digest: chart, Helm: helm},
		},
		"b": {
			{Release: "apps", Source: "git", Revision: "r1", Digest: src, Path: "clusters/b"},
			{Release: "broken", Source: "git", Revision: "r1", Digest: src, Path: "clusters/big"},
			{Release: "old", Source: "git", Revision: "r0", Digest: absent, Path: "clusters/b"},
		},
	}}
	previous := map[string]desired.Document{"b": {Assignments: []desired.Assignment{{Release: "broken", Revision: "r0", Digest: "sha256:" + strings.Repeat("b", 64)}}}}
	p.Apply(ctx, fleet, &plan, previous)

	a, b := plan.Assignments["a"], plan.Assignments["b"]
	na, _ := p.Narrow(ctx, src, "clusters/a")
	nb, _ := p.Narrow(ctx, src, "clusters/b")
	nv, _ := p.Narrow(ctx, src, "values/prod.yaml")
	for _, c := range []struct {
		what, got, want string
	}{
		{"a's apps", a[0].Digest, na},
		{"a's apps revision", a[0].Revision, "r1"},
		{"a's canary (a rollout: narrowed too)", a[1].Digest, na},
		{"a's canary's source artifact (what its rollout compares)", a[1].SourceDigest, src},
		{"a's apps has no source artifact (no rollout)", a[0].SourceDigest, ""},
		{"a's web (a Helm source: left whole)", a[2].Digest, chart},
		{"a's web values file", a[2].Helm.ValuesFiles[0].Digest, nv},
		{"b's apps", b[0].Digest, nb},
		{"b's broken (kept from previous)", b[1].Revision, "r0"},
		{"b's old (not in this store)", b[2].Digest, absent},
	} {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.what, c.got, c.want)
		}
	}
	if len(a) != 3 {
		t.Errorf("cluster a has %d assignments, want 3: broken not assigned (no previous one)", len(a))
	}
	if helm.ValuesFiles[0].Digest != src {
		t.Errorf("Apply changed the Helm settings shared by the release's clusters")
	}
	var msgs []string
	for _, pr := range plan.Problems {
		msgs = append(msgs, pr.String())
	}
	want := []string{
		`Release/broken on cluster a: per-path artifact of path "clusters/big" at r1 not packed: artifact ` + src + `: closure of path "clusters/big": clusters/big/7.yaml: more than 8 entries; not assigned`,
		`Release/broken on cluster b: per-path artifact of path "clusters/big" at r1 not packed: artifact ` + src + `: closure of path "clusters/big": clusters/big/7.yaml: more than 8 entries; kept the previous assignment (revision r0)`,
	}
	if len(msgs) != 2 {
		t.Fatalf("problems %q, want one per cluster for broken", msgs)
	}
	slices.Sort(msgs)
	for i, w := range want {
		if msgs[i] != w {
			t.Errorf("problem %q, want %q", msgs[i], w)
		}
	}
}
