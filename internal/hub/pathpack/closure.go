package pathpack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/internal/render"
	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
)

// Limits bound the walk of one closure: the source is the hub's, but its content is whoever
// can push to it.
type Limits struct {
	// MaxEntries bounds the files, symlinks and directories in a closure.
	MaxEntries int
	// MaxBytes bounds the bytes of its files.
	MaxBytes int64
	// MaxKustomizations bounds the kustomization directories visited.
	MaxKustomizations int
	// MaxDepth bounds how deep references nest (a kustomization naming a base naming a
	// component ...) and how deep a directory walk goes.
	MaxDepth int
}

// DefaultLimits are far above any real release path: a closure is at most a source.
func DefaultLimits() Limits {
	return Limits{MaxEntries: 20000, MaxBytes: 512 << 20, MaxKustomizations: 2000, MaxDepth: 64}
}

// maxLinkHops bounds the symlinks followed to resolve one path, as the kernel's ELOOP does.
const maxLinkHops = 40

// LimitError says which limit a closure exceeded.
type LimitError struct {
	Path  string // the release path
	What  string // "entries", "bytes", "kustomizations", "depth"
	Limit int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("closure of path %q: more than %d %s", e.Path, e.Limit, e.What)
}

// Closure returns what the agent's renderer may read to render path p of the source tree at
// root: slash-separated paths relative to root of regular files, symlinks and directories,
// sorted, for artifact.PackFiles. A path that does not exist has an empty closure (the agent
// then fails to render it as it would have on the whole source). It fails only when a limit
// is exceeded or ctx ends.
func Closure(ctx context.Context, root, p string, lim Limits) ([]string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("closure of path %q: source %s: %w", p, root, err)
	}
	c := &closure{ctx: ctx, root: abs, path: p, lim: lim, entries: map[string]bool{}, visited: map[string]bool{}}
	if p == "" {
		p = "."
	}
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		return []string{}, nil // the agent refuses it: ErrOutsideRoot
	}
	if err := c.top(path.Clean(filepath.ToSlash(p))); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(c.entries))
	for e := range c.entries {
		out = append(out, e)
	}
	slices.Sort(out)
	return out, nil
}

type closure struct {
	ctx     context.Context
	root    string // absolute
	path    string // the release path, for errors
	lim     Limits
	entries map[string]bool // real paths (no symlink above them) relative to root
	bytes   int64
	visited map[string]bool // kustomization directories, as kustomize names them
}

// target is a path resolved: real is where it is (no symlinks in it), links the symlinks
// that led there, which the artifact must hold too.
type target struct {
	real  string
	info  fs.FileInfo
	links []string
}

// resolve follows rel (clean, local) component by component as the file system would,
// through symlinks that stay inside root. ok is false when it does not exist, leaves root,
// loops, or crosses .git (never packed).
func (c *closure) resolve(rel string) (t target, ok bool) {
	comps := splitPath(rel)
	cur := "."
	for hops := 0; len(comps) > 0; {
		name := comps[0]
		comps = comps[1:]
		if name == ".git" {
			return target{}, false
		}
		next := path.Join(cur, name)
		fi, err := os.Lstat(c.abs(next))
		if err != nil {
			return target{}, false
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if hops++; hops > maxLinkHops {
				return target{}, false
			}
			dest, err := os.Readlink(c.abs(next))
			if err != nil || path.IsAbs(dest) || filepath.IsAbs(dest) {
				return target{}, false
			}
			// cur has no symlink in it, so ".." in dest climbs real directories.
			joined := path.Join(cur, dest)
			if !filepath.IsLocal(filepath.FromSlash(joined)) && joined != "." {
				return target{}, false
			}
			t.links = append(t.links, next)
			comps = append(splitPath(joined), comps...)
			cur = "."
			continue
		}
		if len(comps) > 0 && !fi.IsDir() {
			return target{}, false
		}
		cur = next
	}
	fi, err := os.Stat(c.abs(cur))
	if err != nil {
		return target{}, false
	}
	t.real, t.info = cur, fi
	return t, true
}

func splitPath(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

func (c *closure) abs(rel string) string { return filepath.Join(c.root, filepath.FromSlash(rel)) }

// add puts a resolved target into the closure: its symlinks, and the file or directory
// itself (a directory without its contents).
func (c *closure) add(t target) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	for _, l := range t.links {
		if err := c.entry(l, 0); err != nil {
			return err
		}
	}
	if t.real == "." {
		return nil // the root is not an entry
	}
	size := int64(0)
	if t.info.Mode().IsRegular() {
		size = t.info.Size()
	}
	return c.entry(t.real, size)
}

func (c *closure) entry(rel string, size int64) error {
	if c.entries[rel] {
		return nil
	}
	c.entries[rel] = true
	c.bytes += size
	switch {
	case len(c.entries) > c.lim.MaxEntries:
		return &LimitError{Path: c.path, What: "entries", Limit: int64(c.lim.MaxEntries)}
	case c.bytes > c.lim.MaxBytes:
		return &LimitError{Path: c.path, What: "bytes", Limit: c.lim.MaxBytes}
	}
	return nil
}

// top adds the closure of the release path rel, read as the renderer reads it.
func (c *closure) top(rel string) error {
	t, ok := c.resolve(rel)
	if !ok {
		return nil
	}
	if err := c.add(t); err != nil {
		return err
	}
	if !t.info.IsDir() {
		return nil // a values or patch file
	}
	return c.directory(rel, t, 0)
}

// directory adds what rendering directory dir (resolved to t) reads: a chart, a
// kustomization, or plain manifests.
func (c *closure) directory(dir string, t target, depth int) error {
	if fi, err := os.Stat(c.abs(path.Join(t.real, "Chart.yaml"))); err == nil && fi.Mode().IsRegular() {
		// Helm reads the whole chart: templates, subcharts, .helmignore, files .Files reads.
		return c.walk(t.real, depth, func(string, bool) bool { return true })
	}
	if hasKustomization(c.abs(t.real)) {
		return c.kustomization(dir, t, depth)
	}
	return c.walk(t.real, depth, func(name string, isDir bool) bool {
		if strings.HasPrefix(name, ".") {
			return false
		}
		return isDir || isManifest(name) || slices.Contains(konfig.RecognizedKustomizationFileNames(), name)
	})
}

// hasKustomization reports whether real directory dir holds a kustomization file, as the
// renderer decides it (Lstat: a symlink counts).
func hasKustomization(dir string) bool {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

func isManifest(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// walk adds the entries below real directory dir that want accepts (by name; directories
// are descended into when accepted), following symlinks that stay inside the root. A
// symlink back to a directory being walked is not followed again.
func (c *closure) walk(dir string, depth int, want func(name string, isDir bool) bool) error {
	return c.walkDir(dir, depth, []string{dir}, want)
}

func (c *closure) walkDir(dir string, depth int, chain []string, want func(string, bool) bool) error {
	if depth > c.lim.MaxDepth {
		return &LimitError{Path: c.path, What: "levels deep", Limit: int64(c.lim.MaxDepth)}
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	ents, err := os.ReadDir(c.abs(dir))
	if err != nil {
		return nil // unreadable: the renderer says so
	}
	for _, e := range ents {
		if e.Name() == ".git" {
			continue
		}
		t, ok := c.resolve(path.Join(dir, e.Name()))
		if !ok || !want(e.Name(), t.info.IsDir()) {
			continue
		}
		switch {
		case t.info.IsDir():
			if slices.Contains(chain, t.real) {
				continue // a symlink cycle: the renderer leaves it out too
			}
			if err := c.add(t); err != nil {
				return err
			}
			if err := c.walkDir(t.real, depth+1, append(chain, t.real), want); err != nil {
				return err
			}
		case t.info.Mode().IsRegular():
			if err := c.add(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// kustomization adds the kustomization in directory dir (as kustomize names it: relative
// references are taken from there) and everything it names.
func (c *closure) kustomization(dir string, t target, depth int) error {
	if c.visited[dir] {
		return nil // a cycle, or a base shared by two overlays
	}
	c.visited[dir] = true
	switch {
	case len(c.visited) > c.lim.MaxKustomizations:
		return &LimitError{Path: c.path, What: "kustomizations", Limit: int64(c.lim.MaxKustomizations)}
	case depth > c.lim.MaxDepth:
		return &LimitError{Path: c.path, What: "levels deep", Limit: int64(c.lim.MaxDepth)}
	}
	var data []byte
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		kt, ok := c.resolve(path.Join(dir, name))
		if !ok || !kt.info.Mode().IsRegular() {
			continue
		}
		// Every one there: kustomize refuses a directory with more than one.
		if err := c.add(kt); err != nil {
			return err
		}
		if data == nil {
			if data, _ = c.read(kt); data == nil {
				data = []byte{}
			}
		}
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil // kustomize says what does not parse
	}
	k.FixKustomization() // bases into resources, env into envs

	for _, ref := range slices.Concat(k.Resources, k.Components) {
		if err := c.ref(dir, ref, depth, nil); err != nil {
			return err
		}
	}
	for _, ref := range slices.Concat(k.Generators, k.Transformers, k.Validators) {
		if render.IsInlineEntry(ref) {
			if err := c.pluginConfigs(dir, []byte(ref), depth); err != nil {
				return err
			}
			continue
		}
		// A config file's paths are relative to the kustomization, not to the file.
		if err := c.ref(dir, ref, depth, func(data []byte) error { return c.pluginConfigs(dir, data, depth) }); err != nil {
			return err
		}
	}
	files := slices.Concat(k.Crds, k.Configurations, []string{k.OpenAPI["path"]})
	for _, p := range k.Patches {
		files = append(files, p.Path)
	}
	for _, p := range k.PatchesJson6902 {
		files = append(files, p.Path)
	}
	for _, p := range k.PatchesStrategicMerge {
		if !render.IsInlineEntry(string(p)) {
			files = append(files, string(p))
		}
	}
	for _, r := range k.Replacements {
		files = append(files, r.Path)
	}
	for _, g := range k.ConfigMapGenerator {
		files = append(append(files, render.FileSourcePaths(g.FileSources)...), g.EnvSources...)
	}
	for _, g := range k.SecretGenerator {
		files = append(append(files, render.FileSourcePaths(g.FileSources)...), g.EnvSources...)
	}
	for _, f := range files {
		if err := c.file(dir, f); err != nil {
			return err
		}
	}
	// helmCharts and helmGlobals: the agent refuses them (render.ErrHelmNotAllowed), from the
	// kustomization file alone.
	return nil
}

// ref adds entry ref of the kustomization in dir: a directory is a kustomization to follow,
// a file is added and, for a plugin config, parsed by config.
func (c *closure) ref(dir, ref string, depth int, config func([]byte) error) error {
	rel, ok := local(dir, ref)
	if !ok {
		return nil
	}
	t, ok := c.resolve(rel)
	if !ok {
		return nil
	}
	if err := c.add(t); err != nil {
		return err
	}
	if t.info.IsDir() {
		return c.kustomization(rel, t, depth+1)
	}
	if config != nil {
		if data, _ := c.read(t); data != nil {
			return config(data)
		}
	}
	return nil
}

// file adds a file that a kustomization field names; a directory (a generator's files may
// name one) with the files directly in it.
func (c *closure) file(dir, ref string) error {
	rel, ok := local(dir, ref)
	if !ok {
		return nil
	}
	t, ok := c.resolve(rel)
	if !ok {
		return nil
	}
	if err := c.add(t); err != nil {
		return err
	}
	if !t.info.IsDir() {
		return nil
	}
	return c.walk(t.real, c.lim.MaxDepth, func(string, bool) bool { return true })
}

// read reads a resolved file, at most MaxBytes of it.
func (c *closure) read(t target) ([]byte, error) {
	f, err := os.Open(c.abs(t.real))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, c.lim.MaxBytes))
}

// pluginConfig holds the fields of the built-in generators and transformers that name files
// (as internal/render's checker reads them).
type pluginConfig struct {
	Files        []string `yaml:"files"`
	Envs         []string `yaml:"envs"`
	Env          string   `yaml:"env"`
	Path         string   `yaml:"path"`
	Paths        []string `yaml:"paths"`
	Replacements []struct {
		Path string `yaml:"path"`
	} `yaml:"replacements"`
	TargetFilePath string `yaml:"targetFilePath"`
}

// pluginConfigs adds the files that the generator or transformer configs in data name,
// relative to the kustomization directory dir.
func (c *closure) pluginConfigs(dir string, data []byte, depth int) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for n := 0; ; n++ {
		if n > c.lim.MaxEntries {
			return &LimitError{Path: c.path, What: "entries", Limit: int64(c.lim.MaxEntries)}
		}
		var pc pluginConfig
		err := dec.Decode(&pc)
		var te *yaml.TypeError
		if errors.Is(err, io.EOF) || (err != nil && !errors.As(err, &te)) {
			return nil // kustomize reports what does not parse
		}
		refs := slices.Concat(render.FileSourcePaths(pc.Files), pc.Envs, []string{pc.Env, pc.Path, pc.TargetFilePath})
		for _, p := range pc.Paths {
			if !render.IsInlineEntry(p) {
				refs = append(refs, p)
			}
		}
		for _, r := range pc.Replacements {
			refs = append(refs, r.Path)
		}
		for _, r := range refs {
			if err := c.file(dir, r); err != nil {
				return err
			}
		}
	}
}

// local returns reference ref of a kustomization in dir as a path relative to the root; ok
// is false for what is not a local path inside the root (a URL, an absolute path, a path
// climbing out): the agent refuses those, and nothing of the source is needed for that.
func local(dir, ref string) (string, bool) {
	if ref == "" || render.IsRemoteRef(ref) || path.IsAbs(ref) {
		return "", false
	}
	rel := path.Join(dir, ref)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}
