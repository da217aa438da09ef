package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// sealedFS is the file system kustomize builds from: the in-memory copy of the root, refusing
// to hand kustomize any configuration that names a remote location.
//
// Why a file system and not a failing HTTP client: kustomize (api v0.21.1) has no seam for
// either. krusty.Kustomizer.Run builds its own loader (api/internal/loader.NewLoader), whose
// FileLoader fetches http(s) files with a zero &http.Client{} (the process-wide default
// transport) and clones Git bases by running the git binary; neither can be injected through
// the public API, and replacing http.DefaultTransport would change every client in the agent.
// What can be injected is the file system, and every byte of configuration kustomize
// interprets comes through its ReadFile: kustomization files (read before any entry in them
// is acted on) and the generator, transformer and validator config files it loads. So the
// seal is here, and it is field-blind on purpose:
//
//   - every string in a kustomization, and in every built-in plugin config (apiVersion
//     "builtin"), inline or in a file, that kustomize could take for a remote location (a URL
//     of any scheme, git::, github.com/..., user@host:path) is refused, whatever field holds
//     it (a "key=" prefix, as configMapGenerator files have, does not hide it), so a field a
//     future kustomize learns to fetch is covered too; only annotations, labels and
//     configMapGenerator/secretGenerator literals, which kustomize copies and never loads,
//     are skipped;
//   - a generators, transformers or validators entry that is a kustomization directory is
//     refused: the configs it builds are made by kustomize (a replacement can assemble a URL
//     from pieces no file holds), so nothing could check them before they are used.
//
// A refusal is both returned from ReadFile, so kustomize stops before acting on the file, and
// remembered, so that the build fails with it even if kustomize swallowed the error. The
// field-aware checks in policy.go run before kustomize and give the same errors; this is what
// still holds if they miss something.
type sealedFS struct {
	filesys.FileSystem
	mu      sync.Mutex
	refused error // the first refusal, *Error
}

func newSealedFS(fsys filesys.FileSystem) *sealedFS { return &sealedFS{FileSystem: fsys} }

// ReadFile returns the file's content, or the reason kustomize may not have it.
func (s *sealedFS) ReadFile(name string) ([]byte, error) {
	data, err := s.FileSystem.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if err := s.check(name, data); err != nil {
		s.mu.Lock()
		if s.refused == nil {
			s.refused = err
		}
		s.mu.Unlock()
		return nil, err
	}
	return data, nil
}

// Open is refused: kustomize reads files with ReadFile, and a second way in would bypass the
// seal.
func (s *sealedFS) Open(name string) (filesys.File, error) {
	return nil, fmt.Errorf("%s: opening files is not supported by the sealed file system", name)
}

// refusal returns the first refusal, or nil.
func (s *sealedFS) refusal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (s *sealedFS) check(name string, data []byte) error {
	rel := strings.TrimPrefix(path.Clean(name), "/")
	if isKustomizationFile(path.Base(name)) {
		return s.checkKustomization(rel, data)
	}
	return sealDocs(rel, "", data, true)
}

// checkKustomization seals a kustomization file: every string that looks remote, and plugin
// entries that are inline configs (sealed as configs) or kustomization directories (refused).
func (s *sealedFS) checkKustomization(rel string, data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil // kustomize reports it
	}
	top := doc.Content[0]
	if err := sealNode(rel, "", top); err != nil {
		return err
	}
	if top.Kind != yaml.MappingNode {
		return nil
	}
	dir := path.Dir(rel)
	for i := 0; i+1 < len(top.Content); i += 2 {
		list, v := top.Content[i].Value, top.Content[i+1]
		if (list != "generators" && list != "transformers" && list != "validators") || v.Kind != yaml.SequenceNode {
			continue
		}
		for j, e := range v.Content {
			if e.Kind != yaml.ScalarNode {
				continue
			}
			field := fmt.Sprintf("%s[%d]", list, j)
			if IsInlineEntry(e.Value) {
				if err := sealDocs(rel, field+": ", []byte(e.Value), false); err != nil {
					return err
				}
				continue
			}
			if target := path.Join("/", dir, e.Value); s.IsDir(target) {
				return &Error{File: rel, Err: fmt.Errorf("%s: %q is a directory: %w", field, e.Value, ErrConfigNotCheckable)}
			}
		}
	}
	return nil
}

// sealDocs seals the YAML documents in data that are built-in plugin configs (all of them when
// onlyBuiltin is false: the entries of a kustomization's plugin lists). Documents that do not
// parse are left to kustomize.
func sealDocs(file, prefix string, data []byte, onlyBuiltin bool) error {
	if onlyBuiltin && !bytes.Contains(data, []byte(konfig.BuiltinPluginApiVersion)) {
		return nil // cheap test: most files read are resources
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) || err != nil {
			return nil
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		m := doc.Content[0]
		apiVersion, kind, name := scalarAt(m, "apiVersion"), scalarAt(m, "kind"), ""
		if md := valueAt(m, "metadata"); md != nil {
			name = scalarAt(md, "name")
		}
		if onlyBuiltin && apiVersion != konfig.BuiltinPluginApiVersion {
			continue
		}
		if err := sealNode(file, prefix+kind+"/"+name+": ", m); err != nil {
			return err
		}
	}
}

// sealNode refuses the first string below n that looks like a remote location, naming its
// field path (prefix, then "patches[0].path").
func sealNode(file, prefix string, n *yaml.Node) error {
	return walkStrings(n, "", func(field, s string) error {
		// "key=path" is how configMapGenerator and secretGenerator name a file under a key.
		_, afterKey, _ := strings.Cut(s, "=")
		if looksRemote(s) || looksRemote(afterKey) {
			return &Error{File: file, Err: remoteRefused(prefix+field, s)}
		}
		return nil
	})
}

// walkStrings calls f for every string scalar below n with its field path, skipping the
// values of annotations and labels (data that kustomize copies onto objects, never loads).
func walkStrings(n *yaml.Node, field string, f func(field, s string) error) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			switch k {
			case "annotations", "commonAnnotations", "labels", "commonLabels":
				if n.Content[i+1].Kind == yaml.MappingNode {
					continue
				}
			case "literals":
				// configMapGenerator/secretGenerator "key=value" literals: values, not files.
				continue
			}
			sub := k
			if field != "" {
				sub = field + "." + k
			}
			if err := walkStrings(n.Content[i+1], sub, f); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := walkStrings(c, fmt.Sprintf("%s[%d]", field, i), f); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if n.Tag == "!!str" || n.Tag == "" {
			return f(field, n.Value)
		}
	case yaml.AliasNode:
		// An alias repeats an anchored node, which is walked where it is defined.
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := walkStrings(c, field, f); err != nil {
				return err
			}
		}
	}
	return nil
}

func valueAt(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalarAt(m *yaml.Node, key string) string {
	if v := valueAt(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// urlLike matches a string that starts with a URL scheme followed by "//" (http://, https://,
// ssh://, file://, git://, s3://, ...).
var urlLike = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// looksRemote reports whether kustomize could take s, a whole string value, for a remote
// location: a URL of any scheme, go-getter's git:: prefix, a github.com shorthand or an
// scp-like Git address. Unlike IsRemoteRef, which judges fields known to hold paths, it looks at
// every string, so it only matches strings that start like a location: "URL=https://x" (a
// configMapGenerator literal) and multi-line inline patches are not locations.
func looksRemote(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "\n") {
		return false
	}
	return remoteLocation(strings.ToLower(s), urlLike.MatchString)
}

// remoteRefused is the error for a remote reference in field.
func remoteRefused(field, ref string) error {
	return fmt.Errorf("%s: remote reference %q refused: %w", field, ref, ErrRemoteNotAllowed)
}
