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
// It checks, field by field, the kustomization's own fields and the file fields of the
// built-in generators and transformers (inline and in files). It is not what keeps kustomize
// inside the root (the in-memory file system does that) nor off the network (sealedFS does
// that too, field-blind); it exists so that such kustomizations fail with an error that names
// the file, the field and the reference before kustomize starts.
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
	for _, d := range dirRefs(&k) {
		isPluginConfig := d.isPluginConfig()
		for i, ref := range d.refs {
			field := fmt.Sprintf("%s[%d]", d.field, i)
			if isPluginConfig && IsInlineEntry(ref) {
				if err := c.checkPluginConfigs(kf, dir, field+": ", []byte(ref)); err != nil {
					return err
				}
				continue
			}
			target, err := c.local(kf, dir, field, ref)
			if err != nil {
				return err
			}
			if c.fsys.IsDir(memPath(target)) {
				if isPluginConfig {
					return fail(fmt.Errorf("%s: %q is a directory: %w", field, ref, ErrConfigNotCheckable))
				}
				if err := c.checkDir(target); err != nil {
					return err
				}
				continue
			}
			if isPluginConfig {
				if data, err := c.fsys.ReadFile(memPath(target)); err == nil {
					// Paths in a config are relative to the kustomization, not to the config file.
					if err := c.checkPluginConfigs(target, dir, "", data); err != nil {
						return err
					}
				}
			}
		}
	}

	// Entries that name files.
	for _, f := range fileRefs(&k) {
		if _, err := c.local(kf, dir, f.field, f.ref); err != nil {
			return err
		}
	}
	return nil
}

// pluginConfig holds the fields of the built-in generators and transformers (api/builtins)
// that name files, which kustomize would load, or fetch when they are URLs.
type pluginConfig struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	// ConfigMapGenerator, SecretGenerator.
	Files []string `yaml:"files"`
	Envs  []string `yaml:"envs"`
	Env   string   `yaml:"env"`
	// PatchTransformer, PatchJson6902Transformer.
	Path string `yaml:"path"`
	// PatchStrategicMergeTransformer: files or inline patches.
	Paths []string `yaml:"paths"`
	// ReplacementTransformer.
	Replacements []struct {
		Path string `yaml:"path"`
	} `yaml:"replacements"`
	// ValueAddTransformer: TargetFilePath is loaded; Value is written into objects, and a value
	// that is a remote location is refused too (it could be a file field of another config).
	TargetFilePath string `yaml:"targetFilePath"`
	Value          string `yaml:"value"`
}

// checkPluginConfigs checks the generator, transformer or validator configs in data, inline in
// kustomization file (prefix names the entry) or in a config file (file names it). dir is the
// kustomization's directory, against which kustomize resolves the configs' paths.
func (c *checker) checkPluginConfigs(file, dir, prefix string, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var pc pluginConfig
		err := dec.Decode(&pc)
		if errors.Is(err, io.EOF) || (err != nil && !isTypeError(err)) {
			return nil // kustomize reports what does not parse, with more context
		}
		if pc.APIVersion != konfig.BuiltinPluginApiVersion {
			continue // kustomize refuses other plugins: ErrPluginsNotAllowed
		}
		obj := prefix + pc.Kind + "/" + pc.Metadata.Name + ": "
		if pc.Kind == "HelmChartInflationGenerator" {
			return &Error{File: file, Err: fmt.Errorf("%sHelmChartInflationGenerator refused: %w", prefix, ErrHelmNotAllowed)}
		}
		if looksRemote(pc.Value) {
			return &Error{File: file, Err: remoteRefused(obj+"value", pc.Value)}
		}
		for _, r := range pc.fileRefs(obj) {
			if _, err := c.local(file, dir, r.field, r.ref); err != nil {
				return err
			}
		}
	}
}

// refList is a field of a kustomization whose entries may name a directory: a base, a
// component, or (for generators, transformers and validators) a plugin config.
type refList struct {
	field string
	refs  []string
}

func (l refList) isPluginConfig() bool {
	return l.field == "generators" || l.field == "transformers" || l.field == "validators"
}

// dirRefs lists the fields of k that may name another kustomization directory: what the
// checker follows, and what Closure follows, so that the two read the same references.
func dirRefs(k *types.Kustomization) []refList {
	return []refList{
		{"resources", k.Resources},
		{"bases", k.Bases}, //nolint:staticcheck // deprecated, but what users write is checked and followed
		{"components", k.Components},
		{"generators", k.Generators},
		{"transformers", k.Transformers},
		{"validators", k.Validators},
	}
}

// fieldRef is one entry of a field that names a file, with the field as errors name it
// ("patches[0].path").
type fieldRef struct{ field, ref string }

// fileRefs lists the entries of k that name files (never a base), inline entries left out.
func fileRefs(k *types.Kustomization) []fieldRef {
	var files []fieldRef
	add := func(field string, ref string) {
		if ref != "" {
			files = append(files, fieldRef{field, ref})
		}
	}
	addAll := func(field string, refs []string) {
		for i, r := range refs {
			add(fmt.Sprintf("%s[%d]", field, i), r)
		}
	}
	addAll("crds", k.Crds)
	addAll("configurations", k.Configurations)
	add("openapi.path", k.OpenAPI["path"])
	for i, p := range k.Patches {
		add(fmt.Sprintf("patches[%d].path", i), p.Path)
	}
	for i, p := range k.PatchesJson6902 { //nolint:staticcheck // deprecated, but what users write is checked
		add(fmt.Sprintf("patchesJson6902[%d].path", i), p.Path)
	}
	for i, p := range k.PatchesStrategicMerge { //nolint:staticcheck // deprecated, but what users write is checked
		if !IsInlineEntry(string(p)) {
			add(fmt.Sprintf("patchesStrategicMerge[%d]", i), string(p))
		}
	}
	for i, r := range k.Replacements {
		add(fmt.Sprintf("replacements[%d].path", i), r.Path)
	}
	for i, g := range k.ConfigMapGenerator {
		f := fmt.Sprintf("configMapGenerator[%d]", i)
		addAll(f+".files", FileSourcePaths(g.FileSources))
		addAll(f+".envs", g.EnvSources)
		add(f+".env", g.EnvSource)
	}
	for i, g := range k.SecretGenerator {
		f := fmt.Sprintf("secretGenerator[%d]", i)
		addAll(f+".files", FileSourcePaths(g.FileSources))
		addAll(f+".envs", g.EnvSources)
		add(f+".env", g.EnvSource)
	}
	return files
}

// fileRefs lists the entries of a built-in plugin config that name files, each field
// prefixed with obj (the config as errors name it).
func (pc *pluginConfig) fileRefs(obj string) []fieldRef {
	var refs []fieldRef
	add := func(field, ref string) {
		if ref != "" {
			refs = append(refs, fieldRef{obj + field, ref})
		}
	}
	for i, f := range FileSourcePaths(pc.Files) {
		add(fmt.Sprintf("files[%d]", i), f)
	}
	for i, f := range pc.Envs {
		add(fmt.Sprintf("envs[%d]", i), f)
	}
	add("env", pc.Env)
	add("path", pc.Path)
	for i, p := range pc.Paths {
		if !IsInlineEntry(p) {
			add(fmt.Sprintf("paths[%d]", i), p)
		}
	}
	for i, r := range pc.Replacements {
		add(fmt.Sprintf("replacements[%d].path", i), r.Path)
	}
	add("targetFilePath", pc.TargetFilePath)
	return refs
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
	if IsRemoteRef(ref) {
		return "", &Error{File: kf, Err: remoteRefused(field, ref)}
	}
	if path.IsAbs(ref) {
		return "", &Error{File: kf, Err: fmt.Errorf("%s: %q is an absolute path that %w", field, ref, ErrOutsideRoot)}
	}
	target := path.Join(dir, ref)
	if target == ".." || strings.HasPrefix(target, "../") {
		return "", &Error{File: kf, Err: fmt.Errorf("%s: %q %w", field, ref, ErrOutsideRoot)}
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

// IsRemoteRef reports whether kustomize would fetch ref over the network: any URL (https://,
// ssh://, file://, ...), go-getter's git:: prefix, a github.com shorthand or an scp-like Git
// address. It errs towards "remote": a local directory named github.com is refused too, as
// kustomize itself would treat it as a repository.
func IsRemoteRef(ref string) bool {
	return remoteLocation(strings.ToLower(strings.TrimSpace(ref)), func(l string) bool { return strings.Contains(l, "://") })
}

// remoteLocation reports whether l, lower-cased, names a repository or URL: isURL says how a
// URL is recognised (anywhere in a path field, only at the start of a free string), and the
// rest is go-getter's git:: prefix, a github.com shorthand or an scp-like Git address.
func remoteLocation(l string, isURL func(string) bool) bool {
	return isURL(l) ||
		strings.HasPrefix(l, "git::") ||
		strings.HasPrefix(l, "github.com/") || strings.HasPrefix(l, "github.com:") ||
		scpLike.MatchString(l)
}

// IsInlineEntry reports whether a generators/transformers/patchesStrategicMerge entry is YAML written
// in the kustomization rather than a path.
func IsInlineEntry(s string) bool { return strings.Contains(s, "\n") }

// FileSourcePaths returns the paths of configMapGenerator/secretGenerator files entries, which
// are "path" or "key=path".
func FileSourcePaths(sources []string) []string {
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

func isTypeError(err error) bool {
	var te *yaml.TypeError
	return errors.As(err, &te)
}
