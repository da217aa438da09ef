package sopsfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// ErrMAC: the values do not match the MAC, so the document changed after it was encrypted.
var ErrMAC = errors.New("MAC mismatch: the document changed after it was encrypted (a value, a key, their order, or a plaintext field such as metadata)")

// Decrypt decrypts the document's values with dataKey and checks them against its MAC, and
// returns the plaintext document without its metadata, in its format. Nothing of a document
// whose MAC does not match is returned; errors never hold a value.
func (d *Document) Decrypt(dataKey []byte) ([]byte, error) {
	mac := d.rules.newMAC()
	w := walker(func(n *yaml.Node, path []string) (*yaml.Node, error) {
		encrypted := d.rules.encrypted(path)
		if !encrypted || n.ShortTag() == "!!null" {
			t, ok, err := typedOf(n)
			if err != nil {
				return nil, err
			}
			if ok && (encrypted || !d.rules.macOnlyEncrypted) {
				mac.Write([]byte(t.text))
			}
			return n, nil
		}
		if n.ShortTag() != "!!str" {
			return nil, ErrValue
		}
		if n.Value == "" {
			return n, nil // sops leaves an empty value empty; it adds nothing to the MAC
		}
		text, typ, err := openValue(dataKey, n.Value, adOf(path))
		if err != nil {
			return nil, err
		}
		macText, plain, err := fromCipher(text, typ)
		if err != nil {
			return nil, err
		}
		if plain == nil {
			return nil, nil // an encrypted comment of a sequence: it is no value
		}
		mac.Write([]byte(macText))
		plain.Line, plain.Column = n.Line, n.Column
		return plain, nil
	})
	for _, doc := range d.docs {
		if _, err := w.node(doc.Content[0], nil); err != nil {
			return nil, err
		}
		stripComments(doc)
	}
	stored, _, err := openValue(dataKey, d.Metadata.MAC, d.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, errors.New("MAC: cannot decrypt the stored MAC (was lastmodified or mac edited?)")
	}
	if stored != fmt.Sprintf("%X", mac.Sum(nil)) {
		return nil, ErrMAC
	}
	return emit(d.docs, d.Format)
}

// Encrypt encrypts the values of a plain document (format "yaml" or "json") that rules
// select, with dataKey, and returns it with its metadata: md's stanzas and rules, now as its
// lastmodified time (which the MAC is bound to), and the MAC. Comments on encrypted values
// are dropped: sops would encrypt them, and they would otherwise stay in clear.
func Encrypt(plain []byte, format string, dataKey []byte, md Metadata, now time.Time) ([]byte, error) {
	docs, err := parseNodes(plain, format)
	if err != nil {
		return nil, err
	}
	for _, doc := range docs {
		top := doc.Content[0]
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i].Value == MetadataKey {
				return nil, errors.New("already SOPS-encrypted (it has a sops key)")
			}
		}
	}
	r, err := compileRules(md.Rules)
	if err != nil {
		return nil, err
	}
	mac := r.newMAC()
	w := walker(func(n *yaml.Node, path []string) (*yaml.Node, error) {
		t, ok, err := typedOf(n)
		if err != nil || !ok {
			return n, err
		}
		encrypted := r.encrypted(path)
		if encrypted || !r.macOnlyEncrypted {
			mac.Write([]byte(t.text))
		}
		if !encrypted {
			return n, nil
		}
		n.HeadComment, n.LineComment, n.FootComment = "", "", ""
		if t.text == "" && t.typ == "str" {
			return n, nil // as sops: an empty value stays empty
		}
		sealed, err := sealValue(dataKey, t.text, t.typ, adOf(path))
		if err != nil {
			return nil, err
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: sealed, Line: n.Line, Column: n.Column}, nil
	})
	for _, doc := range docs {
		if _, err := w.node(doc.Content[0], nil); err != nil {
			return nil, err
		}
	}
	md.LastModified = now.UTC().Truncate(time.Second)
	if md.MAC, err = sealValue(dataKey, fmt.Sprintf("%X", mac.Sum(nil)), "str", md.LastModified.Format(time.RFC3339)); err != nil {
		return nil, err
	}
	if md.Version == "" {
		md.Version = FormatVersion
	}
	// The metadata goes in the first document, as the sops CLI reads it.
	top := docs[0].Content[0]
	top.Content = append(top.Content, str(MetadataKey), metadataNode(md))
	return emit(docs, format)
}

// emit writes docs in format: YAML documents indented as the sops CLI writes them, or one
// JSON object.
func emit(docs []*yaml.Node, format string) ([]byte, error) {
	var b bytes.Buffer
	if format == "json" {
		if err := writeJSON(&b, docs[0].Content[0], ""); err != nil {
			return nil, err
		}
		b.WriteByte('\n')
		return b.Bytes(), nil
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(4)
	for _, doc := range docs {
		if err := enc.Encode(doc); err != nil {
			return nil, fmt.Errorf("write yaml: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write yaml: %w", err)
	}
	return b.Bytes(), nil
}

// writeJSON writes n as JSON, keys in their order, indented by tabs.
func writeJSON(b *bytes.Buffer, n *yaml.Node, indent string) error {
	inner := indent + "\t"
	switch n.Kind {
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteString("{\n")
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, _ := json.Marshal(n.Content[i].Value)
			b.WriteString(inner)
			b.Write(key)
			b.WriteString(": ")
			if err := writeJSON(b, n.Content[i+1], inner); err != nil {
				return err
			}
			if i+2 < len(n.Content) {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteString("[\n")
		for i, item := range n.Content {
			b.WriteString(inner)
			if err := writeJSON(b, item, inner); err != nil {
				return err
			}
			if i+1 < len(n.Content) {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	case yaml.AliasNode:
		return writeJSON(b, n.Alias, indent)
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			b.WriteString(strings.ToLower(n.Value))
		case "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return err
			}
			out, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("write json: line %d: %w", n.Line, err)
			}
			b.Write(out)
		default:
			out, _ := json.Marshal(n.Value)
			b.Write(out)
		}
	}
	return nil
}
