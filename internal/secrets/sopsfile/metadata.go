package sopsfile

import (
	"fmt"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// FormatVersion is written as a document's version: the sops release whose format this
// package writes and was tested against.
const FormatVersion = "3.13.3"

// stanza is an age stanza as stored.
type stanza struct {
	Recipient string `yaml:"recipient"`
	Enc       string `yaml:"enc"`
}

// keys are a key group's stanzas: age, and the key types Flotilla does not read.
type keys struct {
	Age     []stanza    `yaml:"age"`
	PGP     []yaml.Node `yaml:"pgp"`
	KMS     []yaml.Node `yaml:"kms"`
	GCPKMS  []yaml.Node `yaml:"gcp_kms"`
	HCKMS   []yaml.Node `yaml:"hckms"`
	AzureKV []yaml.Node `yaml:"azure_kv"`
	HCVault []yaml.Node `yaml:"hc_vault"`
}

func (k keys) empty() bool { return len(k.Age)+k.others() == 0 }

func (k keys) others() int {
	return len(k.PGP) + len(k.KMS) + len(k.GCPKMS) + len(k.HCKMS) + len(k.AzureKV) + len(k.HCVault)
}

// stored is the sops key of a document.
type stored struct {
	Keys                    keys   `yaml:",inline"`
	KeyGroups               []keys `yaml:"key_groups"`
	ShamirThreshold         int    `yaml:"shamir_threshold"`
	LastModified            string `yaml:"lastmodified"`
	MAC                     string `yaml:"mac"`
	UnencryptedSuffix       string `yaml:"unencrypted_suffix"`
	EncryptedSuffix         string `yaml:"encrypted_suffix"`
	UnencryptedRegex        string `yaml:"unencrypted_regex"`
	EncryptedRegex          string `yaml:"encrypted_regex"`
	UnencryptedCommentRegex string `yaml:"unencrypted_comment_regex"`
	EncryptedCommentRegex   string `yaml:"encrypted_comment_regex"`
	MACOnlyEncrypted        bool   `yaml:"mac_only_encrypted"`
	Version                 string `yaml:"version"`
}

func parseMetadata(n *yaml.Node) (Metadata, error) {
	if n.Kind != yaml.MappingNode {
		return Metadata{}, fmt.Errorf("the %s key is not a mapping", MetadataKey)
	}
	var s stored
	if err := n.Decode(&s); err != nil {
		return Metadata{}, fmt.Errorf("%w", err)
	}
	group := s.Keys
	switch {
	case !group.empty():
	case len(s.KeyGroups) > 1:
		return Metadata{}, fmt.Errorf("%d key groups (Shamir secret sharing): only one group of age keys is supported", len(s.KeyGroups))
	case len(s.KeyGroups) == 1:
		group = s.KeyGroups[0]
	default:
		return Metadata{}, fmt.Errorf("no keys")
	}
	if s.UnencryptedCommentRegex != "" || s.EncryptedCommentRegex != "" {
		return Metadata{}, fmt.Errorf("unencrypted_comment_regex and encrypted_comment_regex are not supported: encrypt with another rule (encrypted_regex, say)")
	}
	lastModified, err := time.Parse(time.RFC3339, s.LastModified)
	if err != nil {
		return Metadata{}, fmt.Errorf("lastmodified %q: %w", s.LastModified, err)
	}
	md := Metadata{
		Others: group.others(), LastModified: lastModified, MAC: s.MAC, Version: s.Version,
		Rules: Rules{
			UnencryptedSuffix: s.UnencryptedSuffix, EncryptedSuffix: s.EncryptedSuffix,
			UnencryptedRegex: s.UnencryptedRegex, EncryptedRegex: s.EncryptedRegex,
			MACOnlyEncrypted: s.MACOnlyEncrypted,
		},
	}
	for _, a := range group.Age {
		md.Age = append(md.Age, AgeStanza{Recipient: strings.TrimSpace(a.Recipient), Enc: a.Enc})
	}
	return md, nil
}

// metadataNode is md as a sops key's value, in the order the sops CLI writes it.
func metadataNode(md Metadata) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	add := func(k string, v *yaml.Node) {
		m.Content = append(m.Content, str(k), v)
	}
	if len(md.Age) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, a := range md.Age {
			enc := str(a.Enc)
			enc.Style = yaml.LiteralStyle
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map",
				Content: []*yaml.Node{str("recipient"), str(a.Recipient), str("enc"), enc}})
		}
		add("age", seq)
	}
	add("lastmodified", str(md.LastModified.UTC().Format(time.RFC3339)))
	add("mac", str(md.MAC))
	for _, r := range []struct{ k, v string }{
		{"unencrypted_suffix", md.Rules.UnencryptedSuffix}, {"encrypted_suffix", md.Rules.EncryptedSuffix},
		{"unencrypted_regex", md.Rules.UnencryptedRegex}, {"encrypted_regex", md.Rules.EncryptedRegex},
	} {
		if r.v != "" {
			add(r.k, str(r.v))
		}
	}
	if md.Rules.MACOnlyEncrypted {
		add("mac_only_encrypted", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	add("version", str(md.Version))
	return m
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
