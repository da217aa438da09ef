package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// checker walks a kustomization and everything it includes before kustomize runs, and refuses
// what the agent does not do: fetching remote bases or files, inflating Helm charts, and reading
// outside the artifact root.
//
// It is not what keeps kustomize inside the root (the in-memory file system does that); it
// exists so that such kustomizations fail with an error that names the file and the entry, and
// so that kustomize never gets to clone or download anything.
type checker struct {
	fsys    filesys.FileSystem // the in-memory copy of the root
	outside map[string]bool    // paths of symlinks that lead outside the root
	visited map[string]bool    // kustomization directories already checked
}

// checkDir checks the kustomization in directory dir (relative to the root) and, recursively,
// the kustomizations it refers to.
func (c *checker) checkDir(dir string) error {
	if c.visited[dir] {
		return nil // kustomize reports cycles itself
	}
	c.visited[dir] = true
	kf, err := c.kustomizationIn(dir)
	if err != nil || kf == "" {
		return err
	}
	data, err := c.fsys.ReadFile(memPath(kf))
	if err != nil {
		return &Error{File: kf, Err: err}
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return &Error{File: kf, Err: err}
	}
	fail := func(err error) error { return &Error{File: kf, Err: err} }

	switch {
	case len(k.HelmCharts) > 0:
		return fail(fmt.Errorf("helmCharts refused: %w", ErrHelmNotAllowed))
	case len(k.HelmChartInflationGenerator) > 0:
		return fail(fmt.Errorf("helmChartInflationGenerator refused: %w", ErrHelmNotAllowed))
	case k.HelmGlobals != nil:
		return fail(fmt.Errorf("helmGlobals refused: %w", ErrHelmNotAllowed))
	}

	// Entries that may name another kustomization directory.
	dirRefs := []struct {
		field string
		refs  []string
	}{
		{"resource", k.Resources},
		{"base", k.Bases},
		{"component", k.Components},
		{"generator", k.Generators},
		{"transformer", k.Transformers},
		{"validator", k.Validators},
	}
	for _, d := range dirRefs {
		isPluginConfig := d.field == "generator" || d.field == "transformer" || d.field == "validator"
		for _, ref := range d.refs {
			if isPluginConfig && isInline(ref) {
				if err := refuseHelmConfig(kf, []byte(ref)); err != nil {
					return err
				}
				continue
			}
			target, err := c.local(kf, dir, d.field, ref)
			if err != nil {
				return err
			}
			if c.fsys.IsDir(memPath(target)) {
				if err := c.checkDir(target); err != nil {
					return err
				}
				continue
			}
			if isPluginConfig {
				if data, err := c.fsys.ReadFile(memPath(target)); err == nil {
					if err := refuseHelmConfig(target, data); err != nil {
						return err
					}
				}
			}
		}
	}

	// Entries that name files.
	var files []struct{ field, ref string }
	add := func(field string, refs ...string) {
		for _, r := range refs {
			if r != "" {
				files = append(files, struct{ field, ref string }{field, r})
			}
		}
	}
	add("crd", k.Crds...)
	add("configuration", k.Configurations...)
	add("openapi path", k.OpenAPI["path"])
	for _, p := range k.Patches {
		add("patch", p.Path)
	}
	for _, p := range k.PatchesJson6902 {
		add("patch", p.Path)
	}
	for _, p := range k.PatchesStrategicMerge {
		if !isInline(string(p)) {
			add("patch", string(p))
		}
	}
	for _, r := range k.Replacements {
		add("replacement", r.Path)
	}
	for _, g := range k.ConfigMapGenerator {
		add("configMapGenerator file", fileSourcePaths(g.FileSources)...)
		add("configMapGenerator env", append(g.EnvSources, g.EnvSource)...)
	}
	for _, g := range k.SecretGenerator {
		add("secretGenerator file", fileSourcePaths(g.FileSources)...)
		add("secretGenerator env", append(g.EnvSources, g.EnvSource)...)
	}
	for _, f := range files {
		if _, err := c.local(kf, dir, f.field, f.ref); err != nil {
			return err
		}
	}
	return nil
}

// kustomizationIn returns the path of the kustomization file in dir, or "" if there is none.
func (c *checker) kustomizationIn(dir string) (string, error) {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, name)
		if c.outside[p] {
			return "", &Error{File: p, Err: fmt.Errorf("symlink %w", ErrOutsideRoot)}
		}
		if c.fsys.Exists(memPath(p)) {
			return p, nil
		}
	}
	return "", nil
}

// local checks entry ref of field in kustomization file kf (in directory dir) and returns the
// path it names relative to the root.
func (c *checker) local(kf, dir, field, ref string) (string, error) {
	if isRemote(ref) {
		return "", &Error{File: kf, Err: fmt.Errorf("remote %s %q refused: %w", field, ref, ErrRemoteNotAllowed)}
	}
	if path.IsAbs(ref) {
		return "", &Error{File: kf, Err: fmt.Errorf("%s %q is an absolute path that %w", field, ref, ErrOutsideRoot)}
	}
	target := path.Join(dir, ref)
	if target == ".." || strings.HasPrefix(target, "../") {
		return "", &Error{File: kf, Err: fmt.Errorf("%s %q %w", field, ref, ErrOutsideRoot)}
	}
	for p := target; p != "." && p != "/"; p = path.Dir(p) {
		if c.outside[p] {
			return "", &Error{File: p, Err: fmt.Errorf("symlink %w (%s %q in %s)", ErrOutsideRoot, field, ref, kf)}
		}
	}
	return target, nil
}

// scpLike matches Git's user@host:path addresses (git@github.com:org/repo).
var scpLike = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*@[^/:]+:`)

// isRemote reports whether kustomize would fetch ref over the network: any URL (https://,
// ssh://, file://, ...), go-getter's git:: prefix, a github.com shorthand or an scp-like Git
// address. It errs towards "remote": a local directory named github.com is refused too, as
// kustomize itself would treat it as a repository.
func isRemote(ref string) bool {
	l := strings.ToLower(strings.TrimSpace(ref))
	return strings.Contains(l, "://") ||
		strings.HasPrefix(l, "git::") ||
		strings.HasPrefix(l, "github.com/") || strings.HasPrefix(l, "github.com:") ||
		scpLike.MatchString(l)
}

// isInline reports whether a generators/transformers/patchesStrategicMerge entry is YAML written
// in the kustomization rather than a path.
func isInline(s string) bool { return strings.Contains(s, "\n") }

// fileSourcePaths returns the paths of configMapGenerator/secretGenerator files entries, which
// are "path" or "key=path".
func fileSourcePaths(sources []string) []string {
	paths := make([]string, 0, len(sources))
	for _, s := range sources {
		if _, p, found := strings.Cut(s, "="); found {
			paths = append(paths, p)
		} else {
			paths = append(paths, s)
		}
	}
	return paths
}

// refuseHelmConfig refuses generator configs that inflate Helm charts. Parse errors are left
// to kustomize, which reports them with more context.
func refuseHelmConfig(file string, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var m struct {
			Kind string `yaml:"kind"`
		}
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) || (err != nil && !isTypeError(err)) {
			return nil
		}
		if m.Kind == "HelmChartInflationGenerator" {
			return &Error{File: file, Err: fmt.Errorf("HelmChartInflationGenerator refused: %w", ErrHelmNotAllowed)}
		}
	}
}

func isTypeError(err error) bool {
	var te *yaml.TypeError
	return errors.As(err, &te)
}
