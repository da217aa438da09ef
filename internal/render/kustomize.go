package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// isKustomizationFile reports whether name is one kustomize reads as a kustomization
// (kustomization.yaml, kustomization.yml, Kustomization).
func isKustomizationFile(name string) bool {
	return slices.Contains(konfig.RecognizedKustomizationFileNames(), name)
}

// findKustomization returns the name of the kustomization file in real directory dir, or "".
func findKustomization(dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return name
		}
	}
	return ""
}

// kustomizeMu serialises kustomize builds. kustomize keeps the OpenAPI schema in process-wide
// state (kyaml/openapi) that every build resets from its kustomization's openapi field, so two
// concurrent builds could each see the other's schema. Flux's kustomize-controller guards
// builds the same way.
var kustomizeMu sync.Mutex

// buildKustomization runs kustomize on directory rel of the root, whose kustomization file is
// kustFile.
//
// Rendering is sealed twice over. kustomize reads from an in-memory copy of the root, so
// nothing outside the root exists for it, whatever a kustomization says; it reads that copy
// through sealedFS, which refuses any configuration naming a remote location, so it never
// fetches or clones anything (see sealedFS for why this is the seam). Before that, the checks
// in policy.go walk every kustomization and plugin config and turn such references into clear
// errors naming the file and the field; unchecked (a test hook) skips them, to show that the
// seal holds by itself.
//
// SOPS documents in the files kustomize reads are decrypted as dec says (decryptingFS).
func buildKustomization(ctx context.Context, root, rel, kustFile string, unchecked bool, dec decryption) ([]object, error) {
	fsys, outside, err := loadRoot(ctx, root)
	if err != nil {
		return nil, err
	}
	if !unchecked {
		c := &checker{fsys: fsys, outside: outside, visited: map[string]bool{}}
		if err := c.checkDir(rel); err != nil {
			return nil, err
		}
	}
	kustPath := path.Join(rel, kustFile)
	addedOrigin, err := requestOrigins(fsys, kustPath)
	if err != nil {
		return nil, &Error{File: kustPath, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionNone // keep input order, as Flux does
	// Files anywhere in the artifact may be used, as in Flux; the in-memory file system is the
	// boundary, not kustomize's own restriction to the kustomization's directory.
	opts.LoadRestrictions = types.LoadRestrictionsNone
	opts.PluginConfig = types.DisabledPluginConfig()
	decrypting := newDecryptingFS(fsys, dec)
	sealed := newSealedFS(decrypting)
	m, err := runKustomize(opts, sealed, memPath(rel))
	if refused := sealed.refusal(); refused != nil {
		return nil, refused // whatever kustomize made of it
	}
	if failed := decrypting.failure(); failed != nil {
		return nil, failed
	}
	if err != nil {
		if types.IsErrOnlyBuiltinPluginsAllowed(err) {
			err = fmt.Errorf("%w (%w)", ErrPluginsNotAllowed, err)
		} else {
			err = fmt.Errorf("kustomize build: %w", err)
		}
		return nil, &Error{File: kustPath, Err: err}
	}
	return kustomizeObjects(m, rel, kustPath, addedOrigin)
}

func runKustomize(opts *krusty.Options, fsys filesys.FileSystem, dir string) (resmap.ResMap, error) {
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	return krusty.MakeKustomizer(opts).Run(fsys, dir)
}

// kustomizeObjects converts kustomize's output, taking each object's file from its origin
// annotation and removing that annotation when Render added it.
func kustomizeObjects(m resmap.ResMap, rel, kustPath string, addedOrigin bool) ([]object, error) {
	resources := m.Resources()
	objs := make([]object, 0, len(resources))
	for _, res := range resources {
		file := kustPath
		if origin, err := res.GetOrigin(); err == nil && origin != nil && origin.Repo == "" {
			switch {
			case origin.Path != "":
				file = path.Join(rel, origin.Path)
			case origin.ConfiguredIn != "":
				file = path.Join(rel, origin.ConfiguredIn)
			}
		}
		if addedOrigin {
			if err := res.SetOrigin(nil); err != nil {
				return nil, &Error{File: file, Err: fmt.Errorf("removing origin annotation: %w", err)}
			}
		}
		v, err := newYAMLConverter().value(res.YNode())
		if err != nil {
			return nil, &Error{File: file, Err: fmt.Errorf("kustomize output: %w", err)}
		}
		mv, ok := v.(map[string]any)
		if !ok {
			return nil, &Error{File: file, Err: fmt.Errorf("kustomize output: want a Kubernetes object, got %s", describe(v))}
		}
		if err := checkObject(mv); err != nil {
			return nil, &Error{File: file, Err: fmt.Errorf("kustomize output: %w", err)}
		}
		objs = appendUnlessLocal(objs, mv, file, 0, res.YNode)
	}
	return objs, nil
}

// loadRoot copies the root into an in-memory file system, following symlinks that stay inside
// it. Symlinks that leave the root are not copied; their paths are returned so that a
// kustomization referring to one gets an error naming it rather than "file not found".
func loadRoot(ctx context.Context, root string) (filesys.FileSystem, map[string]bool, error) {
	outside := map[string]bool{}
	files, err := copyWalker(root, outside).walk(ctx, ".", root)
	if err != nil {
		return nil, nil, err
	}
	fsys := filesys.MakeFsInMemory()
	for _, f := range files {
		data, err := os.ReadFile(f.real)
		if err != nil {
			return nil, nil, &Error{File: f.rel, Err: err}
		}
		if err := fsys.WriteFile(memPath(f.rel), data); err != nil {
			return nil, nil, &Error{File: f.rel, Err: err}
		}
	}
	return fsys, outside, nil
}

// copyWalker lists the files of the root that kustomize's in-memory copy holds, and
// records in outside the symlinks that lead out of the root.
func copyWalker(root string, outside map[string]bool) *walker {
	return &walker{
		root: root,
		// .git is never needed to build and can be large; other hidden files can be
		// (configMapGenerator envs: [.env]).
		skip: func(name string, isDir bool) bool { return isDir && name == ".git" },
		want: func(string) bool { return true },
		// Unusable symlinks are left out: kustomize reports any it needed as missing, and
		// one leading outside is remembered to say so when a kustomization refers to it.
		problem: func(rel string, _ bool, cause error) error {
			if errors.Is(cause, ErrOutsideRoot) {
				outside[rel] = true
			}
			return nil
		},
	}
}

// requestOrigins adds originAnnotations to the buildMetadata of the in-memory copy of the
// kustomization being built, so that every output object says which file it came from. It
// reports whether it added the option (and so the annotations must be removed again).
func requestOrigins(fsys filesys.FileSystem, kustPath string) (bool, error) {
	data, err := fsys.ReadFile(memPath(kustPath))
	if err != nil {
		return false, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return false, fmt.Errorf("yaml: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return false, errors.New("kustomization is not a YAML mapping")
	}
	top := doc.Content[0]
	var meta *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "buildMetadata" {
			meta = top.Content[i+1]
		}
	}
	if meta == nil {
		meta = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		top.Content = append(top.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "buildMetadata"}, meta)
	}
	if meta.Kind != yaml.SequenceNode {
		return false, errors.New("buildMetadata is not a list")
	}
	for _, item := range meta.Content {
		if item.Value == types.OriginAnnotations {
			return false, nil // the user asked for them: keep them
		}
	}
	meta.Content = append(meta.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: types.OriginAnnotations})
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(&doc); err != nil {
		return false, err
	}
	if err := enc.Close(); err != nil {
		return false, err
	}
	return true, fsys.WriteFile(memPath(kustPath), buf.Bytes())
}

// memPath is where the file at rel (relative to the root) is in the in-memory copy.
func memPath(rel string) string { return path.Join("/", rel) }
