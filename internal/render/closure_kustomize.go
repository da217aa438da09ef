package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
)

// kustomization adds the kustomization in directory dir (as kustomize names it: relative
// references are taken from there, not from where a symlink leads) and, as the pre-build
// checker walks them, everything its fields name.
func (c *closure) kustomization(dir string, depth int) error {
	if c.visited[dir] {
		return nil // a cycle, or a base shared by two overlays
	}
	c.visited[dir] = true
	switch {
	case len(c.visited) > c.lim.MaxKustomizations:
		return c.limit(dir, "kustomizations", int64(c.lim.MaxKustomizations))
	case depth > c.lim.MaxDepth:
		return c.limit(dir, "levels deep", int64(c.lim.MaxDepth))
	}
	var kf string
	var data []byte
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, name)
		t, err := c.resolve(p)
		if errors.Is(err, ErrOutsideRoot) && kf == "" {
			return &Error{File: p, Err: fmt.Errorf("symlink %w", ErrOutsideRoot)} // the checker's refusal
		}
		if errors.Is(err, errMissing) {
			if err := c.brokenLink(p); err != nil {
				return err
			}
		}
		if err != nil || !t.info.Mode().IsRegular() {
			continue
		}
		// Every one there: kustomize refuses a directory with more than one.
		if err := c.add(t); err != nil {
			return err
		}
		if kf == "" {
			kf = p
			if data, err = c.read(t); err != nil {
				return &Error{File: p, Err: err}
			}
		}
	}
	if kf == "" {
		return nil // kustomize says a base has no kustomization
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil // the render says what does not parse, from the file in the closure
	}
	for _, d := range dirRefs(&k) {
		for i, ref := range d.refs {
			field := fmt.Sprintf("%s[%d]", d.field, i)
			if d.isPluginConfig() && IsInlineEntry(ref) {
				if err := c.pluginConfigs(kf, dir, field+": ", []byte(ref)); err != nil {
					return err
				}
				continue
			}
			rel, t, ok, err := c.ref(kf, dir, field, ref)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			switch {
			case t.info.IsDir() && d.isPluginConfig():
				// The checker's refusal: a copy would hold the directory only if some file
				// below it were in the closure, and the checker tells it by that.
				return &Error{File: kf, Err: fmt.Errorf("%s: %q is a directory: %w", field, ref, ErrConfigNotCheckable)}
			case t.info.IsDir():
				if err := c.kustomization(rel, depth+1); err != nil {
					return err
				}
			case d.isPluginConfig():
				data, err := c.read(t)
				if err != nil {
					return &Error{File: rel, Err: err}
				}
				// Paths in a config are relative to the kustomization, not to the config file.
				if err := c.pluginConfigs(rel, dir, "", data); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range fileRefs(&k) {
		if err := c.file(kf, dir, f.field, f.ref); err != nil {
			return err
		}
	}
	return nil
}

// brokenLink adds rel when it is a symlink that resolves to nothing: the renderer decides
// that a directory holds a kustomization by its name alone (findKustomization), and a copy
// without the link would render the directory as plain manifests instead of failing.
func (c *closure) brokenLink(rel string) error {
	parent, err := c.resolve(path.Dir(rel))
	if err != nil {
		return nil
	}
	link := path.Join(parent.real, path.Base(rel))
	if fi, err := os.Lstat(c.abs(link)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	parent.real, parent.info = link, nil
	return c.addLink(parent)
}

// ref resolves entry ref of field in kustomization file kf (in directory dir) and adds it.
// ok is false for what the checker refuses by its text (a remote reference, an absolute
// path, one climbing above the root) and what names nothing: left out, since the render of
// the closure refuses or misses it as the render of the whole tree does. A reference
// through a symlink out of the root is refused here, as the checker refuses it: a copy
// without the symlink would fail differently.
func (c *closure) ref(kf, dir, field, ref string) (rel string, t target, ok bool, err error) {
	if ref == "" || IsRemoteRef(ref) || path.IsAbs(ref) {
		return "", target{}, false, nil
	}
	rel = path.Join(dir, ref)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", target{}, false, nil
	}
	t, err = c.resolve(rel)
	switch {
	case errors.Is(err, ErrOutsideRoot):
		return "", target{}, false, c.escape(kf, field, ref, rel)
	case err != nil:
		return "", target{}, false, nil
	}
	return rel, t, true, c.add(t)
}

// escape is the checker's error for reference ref of field in kf, whose path rel leads out
// of the root through a symlink: it names the symlink as kustomize's copy of the root does.
func (c *closure) escape(kf, field, ref, rel string) error {
	link := rel
	comps := splitRel(rel)
	for i := 1; i <= len(comps); i++ {
		p := strings.Join(comps[:i], "/")
		if _, err := c.resolve(p); errors.Is(err, ErrOutsideRoot) {
			link = p
			break
		}
	}
	return &Error{File: link, Err: fmt.Errorf("symlink %w (%s %q in %s)", ErrOutsideRoot, field, ref, kf)}
}

// file adds a file that field of kustomization file kf names; a directory (a generator's
// files may name one) with what kustomize's copy of the root holds below it.
func (c *closure) file(kf, dir, field, ref string) error {
	rel, t, ok, err := c.ref(kf, dir, field, ref)
	if err != nil || !ok || !t.info.IsDir() {
		return err
	}
	return c.walk(copyWalker(c.root, map[string]bool{}), rel, c.abs(t.real))
}

// pluginConfigs adds the files that the built-in generator, transformer or validator configs
// in data name (inline in kustomization file, prefix naming the entry, or in config file
// file), relative to the kustomization directory dir: the fields the checker checks.
func (c *closure) pluginConfigs(file, dir, prefix string, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for n := 0; ; n++ {
		if n > c.lim.MaxEntries {
			return c.limit(file, "plugin configs", int64(c.lim.MaxEntries))
		}
		var pc pluginConfig
		err := dec.Decode(&pc)
		if errors.Is(err, io.EOF) || (err != nil && !isTypeError(err)) {
			return nil // kustomize reports what does not parse
		}
		if pc.APIVersion != konfig.BuiltinPluginApiVersion {
			continue // the render refuses other plugins (ErrPluginsNotAllowed)
		}
		obj := prefix + pc.Kind + "/" + pc.Metadata.Name + ": "
		for _, r := range pc.fileRefs(obj) {
			if err := c.file(file, dir, r.field, r.ref); err != nil {
				return err
			}
		}
	}
}
