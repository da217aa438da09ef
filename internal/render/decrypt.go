package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// ErrEncrypted: a document is SOPS-encrypted and the release does not ask for decryption
// (Options.Decrypt is nil).
var ErrEncrypted = errors.New("SOPS-encrypted")

// decryption is what Options say about SOPS documents: decrypt them (dec), pass them through
// as ciphertext (keep), or refuse them.
type decryption struct {
	dec  Decryptor
	keep bool
}

func (o Options) decryption() decryption { return decryption{dec: o.Decrypt, keep: o.KeepEncrypted} }

// file returns a manifest file's content with each of its SOPS documents (a top-level
// "sops" key) replaced by its plaintext, before anything parses it into objects, so that
// variable substitution, kustomize's transformers and the checks all see plaintext and never
// ciphertext. A file without one is returned as it is.
//
// SOPS's MAC covers every value of the document as written, in order, so each encrypted
// document is handed to the Decryptor as its own parsed YAML node re-encoded (keys, order
// and scalar styles as written); unencrypted documents beside it are re-encoded the same way.
// One failing document fails the whole file, and so the whole render: nothing of it is applied.
func (d decryption) file(rel string, data []byte) ([]byte, error) {
	if d.keep || !bytes.Contains(data, []byte("sops")) {
		return data, nil
	}
	if strings.EqualFold(path.Ext(rel), ".json") {
		return d.jsonFile(rel, data)
	}
	return d.yamlFile(rel, data)
}

func (d decryption) yamlFile(rel string, data []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	encrypted := false
	for {
		n := new(yaml.Node)
		if err := dec.Decode(n); err == io.EOF {
			break
		} else if err != nil {
			return data, nil // decoding reports it, with its line
		}
		docs = append(docs, n)
		encrypted = encrypted || hasSOPSKey(resolveNode(n))
	}
	if !encrypted {
		return data, nil
	}
	if len(docs) > 1 && sharedMAC(docs) {
		return d.yamlStream(rel, docs)
	}
	var out bytes.Buffer
	for i, n := range docs {
		if i > 0 {
			out.WriteString("---\n")
		}
		text, err := encodeNode(n)
		if err != nil {
			return nil, &Error{File: rel, Line: docLine(n), Err: fmt.Errorf("document %d: %w", i+1, err)}
		}
		if hasSOPSKey(resolveNode(n)) {
			if text, err = d.decrypt(rel, i+1, text, "yaml"); err != nil {
				return nil, &Error{File: rel, Err: err}
			}
		}
		out.Write(text)
	}
	return out.Bytes(), nil
}

// yamlStream decrypts a file the sops CLI encrypted as a whole: each document carries the
// same metadata, and one MAC covers them all, so they decrypt together or not at all.
func (d decryption) yamlStream(rel string, docs []*yaml.Node) ([]byte, error) {
	var text bytes.Buffer
	for i, n := range docs {
		if i > 0 {
			text.WriteString("---\n")
		}
		b, err := encodeNode(n)
		if err != nil {
			return nil, &Error{File: rel, Err: fmt.Errorf("document %d: %w", i+1, err)}
		}
		text.Write(b)
	}
	which := fmt.Sprintf("documents 1-%d (encrypted together)", len(docs))
	if d.dec == nil {
		return nil, &Error{File: rel, Err: fmt.Errorf("%s are %w: set spec.decryption.provider: sops on the release", which, ErrEncrypted)}
	}
	plain, err := d.open(rel, text.Bytes(), "yaml")
	if err != nil {
		return nil, &Error{File: rel, Err: fmt.Errorf("%s: %w", which, err)}
	}
	return plain, nil
}

// sharedMAC reports whether every document is encrypted with the same MAC: one file the
// sops CLI encrypted as a whole, not documents encrypted one by one and put together.
func sharedMAC(docs []*yaml.Node) bool {
	mac := ""
	for _, n := range docs {
		m := sopsField(resolveNode(n), "mac")
		if m == "" || (mac != "" && m != mac) {
			return false
		}
		mac = m
	}
	return true
}

// sopsField is the scalar value of field in the top-level sops mapping of n, or "".
func sopsField(n *yaml.Node, field string) string {
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "sops" || n.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		md := n.Content[i+1]
		for j := 0; j+1 < len(md.Content); j += 2 {
			if md.Content[j].Value == field && md.Content[j+1].Kind == yaml.ScalarNode {
				return md.Content[j+1].Value
			}
		}
	}
	return ""
}

func (d decryption) jsonFile(rel string, data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []json.RawMessage
	encrypted := false
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			break
		} else if err != nil {
			return data, nil // decoding reports it, with its line
		}
		docs = append(docs, raw)
		var top map[string]json.RawMessage
		if json.Unmarshal(raw, &top) == nil && top["sops"] != nil {
			encrypted = true
		}
	}
	if !encrypted {
		return data, nil
	}
	var out bytes.Buffer
	for i, raw := range docs {
		var top map[string]json.RawMessage
		text := []byte(raw)
		if json.Unmarshal(raw, &top) == nil && top["sops"] != nil {
			var err error
			if text, err = d.decrypt(rel, i+1, raw, "json"); err != nil {
				return nil, &Error{File: rel, Err: err}
			}
		}
		out.Write(text)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// decrypt decrypts document doc of file rel, or says why it may not be.
func (d decryption) decrypt(rel string, doc int, text []byte, format string) ([]byte, error) {
	if d.dec == nil {
		return nil, fmt.Errorf("document %d is %w: set spec.decryption.provider: sops on the release", doc, ErrEncrypted)
	}
	plain, err := d.open(rel, text, format)
	if err != nil {
		return nil, fmt.Errorf("document %d: %w", doc, err)
	}
	return plain, nil
}

// open decrypts text (one document, or a stream encrypted as a whole) and marks every object
// of the plaintext as decrypted.
func (d decryption) open(rel string, text []byte, format string) ([]byte, error) {
	plain, err := d.dec.Decrypt(rel, text, format)
	if err != nil {
		return nil, err
	}
	return markDecrypted(plain, format)
}

// DecryptedAnnotation marks an object that came from a decrypted SOPS document, whatever its
// kind: the agent never carries its values (outside apiVersion, kind and metadata) to the
// hub in drift or object detail. It is set on the plaintext before anything else reads it,
// so kustomize's transformers and Helm keep it like any annotation.
const DecryptedAnnotation = "flotilla.dev/decrypted"

// markDecrypted sets DecryptedAnnotation on every object of plain, one or more YAML
// documents or one JSON document. Errors never hold a value of the plaintext.
func markDecrypted(plain []byte, format string) ([]byte, error) {
	if format == "json" {
		var obj map[string]any
		if err := json.Unmarshal(plain, &obj); err != nil {
			return nil, errors.New("the decrypted document is not a JSON object")
		}
		md, _ := obj["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			obj["metadata"] = md
		}
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		ann[DecryptedAnnotation] = "true"
		return json.Marshal(obj)
	}
	dec := yaml.NewDecoder(bytes.NewReader(plain))
	var out bytes.Buffer
	for i := 0; ; i++ {
		n := new(yaml.Node)
		if err := dec.Decode(n); err == io.EOF {
			break
		} else if err != nil {
			return nil, errors.New("the decrypted document is not YAML")
		}
		if root := resolveNode(n); root != nil && root.Kind == yaml.MappingNode {
			setAnnotation(root, DecryptedAnnotation, "true")
		}
		text, err := encodeNode(n)
		if err != nil {
			return nil, errors.New("the decrypted document does not encode as YAML")
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(text)
	}
	return out.Bytes(), nil
}

// setAnnotation sets metadata.annotations[key] = value in the mapping n, creating what is
// missing.
func setAnnotation(n *yaml.Node, key, value string) {
	ann := mappingChild(mappingChild(n, "metadata"), "annotations")
	setMapValue(ann, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: yaml.DoubleQuotedStyle})
}

// mappingChild returns the mapping under key in the mapping n, replacing a missing or null
// one.
func mappingChild(n *yaml.Node, key string) *yaml.Node {
	if v := resolveNode(valueAt(n, key)); v != nil && v.Kind == yaml.MappingNode {
		return v
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	setMapValue(n, key, m)
	return m
}

// setMapValue sets key to v in the mapping n: in place of the value it has, or appended.
func setMapValue(n *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content[i+1] = v
			return
		}
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// hasSOPSKey reports whether n is a mapping with a "sops" key.
func hasSOPSKey(n *yaml.Node) bool {
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Kind == yaml.ScalarNode && n.Content[i].Value == "sops" {
			return true
		}
	}
	return false
}

func encodeNode(n *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func docLine(n *yaml.Node) int {
	if len(n.Content) > 0 {
		return n.Content[0].Line
	}
	return n.Line
}

// decryptingFS is the in-memory copy of the root as kustomize reads it, with the SOPS
// documents of every manifest file kustomize reads decrypted (decryption.file). Decrypting
// the files kustomize reads, rather than its output, keeps each document as it was
// encrypted: kustomize's transformers (namespace, labels, patches) change an object, and
// SOPS's MAC covers every value, so its output would no longer decrypt. Files kustomize
// never reads (another cluster's secrets beside this one's) are never decrypted. The seal
// (sealedFS) sits above, so it checks the plaintext kustomize interprets.
type decryptingFS struct {
	filesys.FileSystem
	d      decryption
	mu     sync.Mutex
	failed error // the first failure, *Error
}

func newDecryptingFS(fsys filesys.FileSystem, d decryption) *decryptingFS {
	return &decryptingFS{FileSystem: fsys, d: d}
}

func (f *decryptingFS) ReadFile(name string) ([]byte, error) {
	data, err := f.FileSystem.ReadFile(name)
	if err != nil || !isManifest(path.Base(name)) {
		return data, err
	}
	out, err := f.d.file(strings.TrimPrefix(path.Clean(name), "/"), data)
	if err != nil {
		f.mu.Lock()
		if f.failed == nil {
			f.failed = err
		}
		f.mu.Unlock()
		return nil, err
	}
	return out, nil
}

// failure is the first file that could not be decrypted, or nil: kustomize may wrap or
// swallow the error ReadFile returned.
func (f *decryptingFS) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}
