package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Limits bound what an import reads: the input is someone else's repository.
type Limits struct {
	// MaxFiles is the most files read below a directory.
	MaxFiles int
	// MaxFileBytes bounds one file; MaxTotalBytes all of them together.
	MaxFileBytes, MaxTotalBytes int64
	// MaxDepth bounds how deeply a document's maps and lists nest.
	MaxDepth int
	// MaxDocuments bounds the objects read in all.
	MaxDocuments int
}

// DefaultLimits are generous for a real Argo CD or Flux repository and small enough that a
// hostile one cannot exhaust memory.
func DefaultLimits() Limits {
	return Limits{MaxFiles: 5000, MaxFileBytes: 4 << 20, MaxTotalBytes: 64 << 20, MaxDepth: 64, MaxDocuments: 20000}
}

// Object is one decoded input document. Getters record which fields were read, so that
// every field no converter read can be reported (see [Object.leftovers]).
type Object struct {
	File       string
	Doc        int
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	m          map[string]any
	used       map[string]bool
}

// ID names the object in the report: "Application/argocd/guestbook".
func (o *Object) ID() string {
	if o.Namespace != "" {
		return o.Kind + "/" + o.Namespace + "/" + o.Name
	}
	if o.Name == "" {
		return fmt.Sprintf("%s in document %d", o.Kind, o.Doc)
	}
	return o.Kind + "/" + o.Name
}

// Group is the API group of the object's apiVersion ("argoproj.io").
func (o *Object) Group() string {
	g, _, ok := strings.Cut(o.APIVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// get returns the value at a dotted path and marks it read.
func (o *Object) get(path string) any {
	o.used[path] = true
	return lookup(o.m, path)
}

func lookup(m any, path string) any {
	cur := m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func (o *Object) str(path string) string { s, _ := o.get(path).(string); return s }

func (o *Object) boolean(path string) (v, set bool) {
	b, ok := o.get(path).(bool)
	return b, ok
}

func (o *Object) mapAt(path string) map[string]any { m, _ := o.get(path).(map[string]any); return m }

func (o *Object) list(path string) []any { l, _ := o.get(path).([]any); return l }

// has reports whether the path is set, without marking it read.
func (o *Object) has(path string) bool { return lookup(o.m, path) != nil }

// markUsed marks paths as handled without reading them.
func (o *Object) markUsed(paths ...string) {
	for _, p := range paths {
		o.used[p] = true
	}
}

// leftovers returns the paths below root that no getter read and that are set, collapsing a
// map none of whose fields was read into its own path.
func (o *Object) leftovers(root string) []string {
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if o.used[path] || v == nil {
			return
		}
		m, ok := v.(map[string]any)
		if !ok || !o.usedBelow(path) {
			out = append(out, path)
			return
		}
		for _, k := range sortedKeys(m) {
			walk(path+"."+k, m[k])
		}
	}
	walk(root, lookup(o.m, root))
	return out
}

func (o *Object) usedBelow(path string) bool {
	for p := range o.used {
		if strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ReadInputs reads every object of the YAML or JSON files at path: the file itself, or every
// *.yaml, *.yml and *.json below the directory (hidden files and directories skipped,
// symbolic links not followed). Files are named by their path as found under path. A
// document that is not an object with apiVersion and kind is a finding, not an error; an
// unreadable file or a broken bound is an error.
func ReadInputs(path string, lim Limits, rep *Report) ([]*Object, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", path, err)
	}
	var files []string
	if !st.IsDir() {
		files = []string{path}
	} else {
		err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != path && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !d.Type().IsRegular() || !isConfigFile(d.Name()) {
				return nil
			}
			files = append(files, p)
			if len(files) > lim.MaxFiles {
				return fmt.Errorf("more than %d YAML/JSON files: import a smaller directory", lim.MaxFiles)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", path, err)
		}
	}
	var objs []*Object
	var total int64
	for _, f := range files {
		data, err := readBounded(f, lim.MaxFileBytes)
		if err != nil {
			return nil, err
		}
		total += int64(len(data))
		if total > lim.MaxTotalBytes {
			return nil, fmt.Errorf("input %s: more than %d bytes of YAML/JSON in all: import a smaller directory", path, lim.MaxTotalBytes)
		}
		got, err := decodeFile(filepath.ToSlash(f), data, lim, rep)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
		if len(objs) > lim.MaxDocuments {
			return nil, fmt.Errorf("input %s: more than %d objects: import a smaller directory", path, lim.MaxDocuments)
		}
	}
	return objs, nil
}

func isConfigFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	buf := &bytes.Buffer{}
	n, err := buf.ReadFrom(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", path, err)
	}
	if n > max {
		return nil, fmt.Errorf("input %s: larger than %d bytes", path, max)
	}
	return buf.Bytes(), nil
}

// errTooDeep is returned for a document nested beyond Limits.MaxDepth.
var errTooDeep = errors.New("nested too deeply")

func decodeFile(file string, data []byte, lim Limits, rep *Report) ([]*Object, error) {
	var objs []*Object
	for i, doc := range splitDocuments(data) {
		docName := fmt.Sprintf("document %d", i+1)
		if d := flowDepth(doc); d > lim.MaxDepth {
			return nil, fmt.Errorf("input %s: %s: %w (more than %d levels)", file, docName, errTooDeep, lim.MaxDepth)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			rep.add(Finding{Level: LeftOut, File: file, Object: docName, Message: "not valid YAML: " + oneLine(err.Error()), Do: "fix the file and import again"})
			continue
		}
		var v any
		if err := json.Unmarshal(j, &v); err != nil {
			rep.add(Finding{Level: LeftOut, File: file, Object: docName, Message: "not valid YAML: " + oneLine(err.Error()), Do: "fix the file and import again"})
			continue
		}
		if v == nil {
			continue
		}
		if valueDepth(v) > lim.MaxDepth {
			return nil, fmt.Errorf("input %s: %s: %w (more than %d levels)", file, docName, errTooDeep, lim.MaxDepth)
		}
		m, ok := v.(map[string]any)
		apiVersion, _ := m["apiVersion"].(string)
		kind, _ := m["kind"].(string)
		if !ok || apiVersion == "" || kind == "" {
			rep.add(Finding{Level: Note, File: file, Object: docName, Message: "not a Kubernetes object (no apiVersion and kind): ignored"})
			continue
		}
		if kind == "List" {
			items, _ := m["items"].([]any)
			for k, it := range items {
				if im, ok := it.(map[string]any); ok {
					objs = append(objs, newObject(file, i+1, im))
				} else {
					rep.add(Finding{Level: Note, File: file, Object: fmt.Sprintf("%s item %d", docName, k), Message: "not an object: ignored"})
				}
			}
			continue
		}
		objs = append(objs, newObject(file, i+1, m))
	}
	return objs, nil
}

func newObject(file string, doc int, m map[string]any) *Object {
	o := &Object{File: file, Doc: doc, m: m, used: map[string]bool{}}
	o.APIVersion, _ = m["apiVersion"].(string)
	o.Kind, _ = m["kind"].(string)
	o.Name, _ = lookup(m, "metadata.name").(string)
	o.Namespace, _ = lookup(m, "metadata.namespace").(string)
	return o
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// splitDocuments cuts a file at lines that start with "---" followed by nothing or white
// space, as kubectl does.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for line := range bytes.Lines(data) {
		if bytes.HasPrefix(line, []byte("---")) && (len(bytes.TrimSpace(line[3:])) == 0 || line[3] == ' ' || line[3] == '\t') {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	docs = append(docs, cur)
	var out [][]byte
	for _, d := range docs {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// flowDepth measures, before the YAML parser sees the document, how deeply its flow
// collections ([ and {) nest, so that a document of a million "[" is refused without being
// built. Block nesting is measured on the decoded value (valueDepth).
func flowDepth(doc []byte) int {
	depth, max := 0, 0
	for line := range bytes.Lines(doc) {
		inQuote := byte(0)
		prev := byte(' ')
	scan:
		for _, c := range line {
			p := prev
			prev = c
			switch {
			case inQuote != 0:
				if c == inQuote {
					inQuote = 0
				}
			case (c == '"' || c == '\'') && strings.IndexByte(" \t:[{,-", p) >= 0:
				// A quoted scalar starts at a token boundary; "don't" quotes nothing.
				inQuote = c
			case c == '#':
				break scan
			case c == '[' || c == '{':
				depth++
				max = maxInt(max, depth)
			case c == ']' || c == '}':
				depth--
			}
		}
	}
	return max
}

// valueDepth is how deeply maps and lists nest in a decoded value.
func valueDepth(v any) int {
	switch v := v.(type) {
	case map[string]any:
		d := 0
		for _, e := range v {
			d = maxInt(d, valueDepth(e))
		}
		return d + 1
	case []any:
		d := 0
		for _, e := range v {
			d = maxInt(d, valueDepth(e))
		}
		return d + 1
	}
	return 0
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
