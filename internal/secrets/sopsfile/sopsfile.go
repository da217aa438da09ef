// Package sopsfile reads and writes the SOPS file format (YAML and JSON) with the standard
// library: the values encrypted with AES-256-GCM under one data key, the MAC over the
// plaintext, the rules that say which values are encrypted, and the metadata that carries
// the data key for each recipient. It does not wrap or unwrap data keys: the caller does,
// for the age stanzas it reads and writes (package secrets), which is all Flotilla uses.
//
// It follows the format the sops CLI writes (github.com/getsops/sops/v3, which the tests
// interoperate with): a value's ciphertext is bound to its path in the document, so a value
// moved or renamed does not decrypt, and the MAC covers every value in document order, so a
// value changed, added or reordered is refused.
package sopsfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// MetadataKey is the top-level key that holds a document's SOPS metadata.
const MetadataKey = "sops"

// defaultUnencryptedSuffix is the rule of a document that names none: values whose key ends
// with it stay in clear.
const defaultUnencryptedSuffix = "_unencrypted"

// AgeStanza is one recipient's copy of the data key: Enc is the key encrypted to Recipient
// with age, ASCII-armored.
type AgeStanza struct {
	Recipient string
	Enc       string
}

// Rules say which values of a document are encrypted. At most one is set; a document that
// sets none leaves values whose key ends with "_unencrypted" in clear and encrypts the rest.
type Rules struct {
	UnencryptedSuffix string
	EncryptedSuffix   string
	UnencryptedRegex  string
	EncryptedRegex    string
	// MACOnlyEncrypted: the MAC covers only the encrypted values.
	MACOnlyEncrypted bool
}

// Metadata is what a document's sops key holds, as far as Flotilla reads it.
type Metadata struct {
	// Age are the age stanzas. A document of several key groups (Shamir) is refused.
	Age []AgeStanza
	// Others counts the stanzas of other key types (PGP, cloud KMS, Vault).
	Others       int
	LastModified time.Time
	// MAC is the encrypted MAC as stored.
	MAC     string
	Rules   Rules
	Version string
}

// Document is a parsed SOPS document: its data (one or more YAML documents, or one JSON
// object) without the metadata, and the metadata.
type Document struct {
	Format   string // "yaml" or "json"
	Metadata Metadata
	docs     []*yaml.Node // document nodes; the sops key removed
	rules    rules
}

// ErrNoMetadata: the document has no sops key, so it is not SOPS-encrypted.
var ErrNoMetadata = errors.New("SOPS metadata: none, the file is not SOPS-encrypted")

// Parse reads an encrypted document of format "yaml" or "json".
func Parse(data []byte, format string) (*Document, error) {
	docs, err := parseNodes(data, format)
	if err != nil {
		return nil, err
	}
	var meta *yaml.Node
	for i, doc := range docs {
		top := doc.Content[0]
		for j := 0; j+1 < len(top.Content); j += 2 {
			if top.Content[j].Value != MetadataKey {
				continue
			}
			if i == 0 {
				if meta != nil {
					return nil, fmt.Errorf("two %s keys", MetadataKey)
				}
				meta = top.Content[j+1]
			}
			top.Content = append(top.Content[:j], top.Content[j+2:]...)
			j -= 2
		}
	}
	if meta == nil {
		return nil, ErrNoMetadata
	}
	md, err := parseMetadata(meta)
	if err != nil {
		return nil, fmt.Errorf("SOPS metadata: %w", err)
	}
	r, err := compileRules(md.Rules)
	if err != nil {
		return nil, fmt.Errorf("SOPS metadata: %w", err)
	}
	return &Document{Format: format, Metadata: md, docs: docs, rules: r}, nil
}

// parseNodes parses data into document nodes whose content is one mapping each.
func parseNodes(data []byte, format string) ([]*yaml.Node, error) {
	switch format {
	case "yaml", "json": // JSON is YAML, and yaml.v3 keeps its order and scalar types
	default:
		return nil, fmt.Errorf("format %q: want yaml or json", format)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", format, err)
		}
		if len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].ShortTag() == "!!null") {
			n.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}} // an empty document
		}
		if n.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("parse %s: a document is a %s, not a mapping: SOPS documents are mappings", format, kindName(n.Content[0].Kind))
		}
		docs = append(docs, &n)
	}
	budget := maxNodes
	for _, doc := range docs {
		if err := expandAliases(doc, &budget); err != nil {
			return nil, fmt.Errorf("parse %s: %w", format, err)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("parse %s: the file is empty", format)
	}
	if format == "json" && len(docs) > 1 {
		return nil, errors.New("parse json: more than one value")
	}
	return docs, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "sequence"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "node"
}

// rules is Rules compiled; exactly one of its fields applies.
type rules struct {
	unencSuffix, encSuffix string
	unencRegex, encRegex   *regexp.Regexp
	macOnlyEncrypted       bool
}

func compileRules(r Rules) (rules, error) {
	n := 0
	for _, s := range []string{r.UnencryptedSuffix, r.EncryptedSuffix, r.UnencryptedRegex, r.EncryptedRegex} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return rules{}, errors.New("more than one of unencrypted_suffix, encrypted_suffix, unencrypted_regex and encrypted_regex")
	}
	out := rules{unencSuffix: r.UnencryptedSuffix, encSuffix: r.EncryptedSuffix, macOnlyEncrypted: r.MACOnlyEncrypted}
	if n == 0 {
		out.unencSuffix = defaultUnencryptedSuffix
	}
	var err error
	if r.UnencryptedRegex != "" {
		if out.unencRegex, err = regexp.Compile(r.UnencryptedRegex); err != nil {
			return rules{}, fmt.Errorf("unencrypted_regex: %w", err)
		}
	}
	if r.EncryptedRegex != "" {
		if out.encRegex, err = regexp.Compile(r.EncryptedRegex); err != nil {
			return rules{}, fmt.Errorf("encrypted_regex: %w", err)
		}
	}
	return out, nil
}

// encrypted reports whether the value at path is encrypted: by the rule, any key on its path
// decides.
func (r rules) encrypted(path []string) bool {
	switch {
	case r.unencSuffix != "":
		for _, k := range path {
			if strings.HasSuffix(k, r.unencSuffix) {
				return false
			}
		}
		return true
	case r.encSuffix != "":
		for _, k := range path {
			if strings.HasSuffix(k, r.encSuffix) {
				return true
			}
		}
		return false
	case r.unencRegex != nil:
		for _, k := range path {
			if r.unencRegex.MatchString(k) {
				return false
			}
		}
		return true
	case r.encRegex != nil:
		for _, k := range path {
			if r.encRegex.MatchString(k) {
				return true
			}
		}
		return false
	}
	return true
}
