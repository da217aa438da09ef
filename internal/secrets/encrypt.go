package secrets

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/getsops/sops/v3/version"
	yaml "go.yaml.in/yaml/v3"
)

// EncryptedRegex is what Encrypt encrypts: the values under data and stringData, so that
// apiVersion, kind and metadata stay readable (and reviewable) in Git.
const EncryptedRegex = "^(data|stringData)$"

// MaxDocumentBytes bounds a Secret manifest to encrypt (the API server's limit for a Secret
// is 1 MiB); MaxEncryptedBytes bounds an encrypted document to decrypt, which also carries
// one age stanza per recipient.
const (
	MaxDocumentBytes  = 1 << 20
	MaxEncryptedBytes = 4 << 20
	// MaxRecipients bounds the recipients of one document: a stanza each.
	MaxRecipients = 5000
)

// ErrNotSecret: Encrypt was given something other than one Secret manifest.
var ErrNotSecret = errors.New("only a Secret manifest can be encrypted")

// Encrypt encrypts one Secret manifest (format "yaml" or "json") with SOPS for recipients:
// every value under data and stringData, with a fresh data key that each recipient's age
// stanza carries. now is the document's lastmodified time, which the MAC is bound to.
func Encrypt(doc []byte, format string, recipients []string, now time.Time) ([]byte, error) {
	if len(doc) > MaxDocumentBytes {
		return nil, fmt.Errorf("%d bytes, at most %d", len(doc), MaxDocumentBytes)
	}
	if err := checkSecret(doc); err != nil {
		return nil, err
	}
	recipients = dedupe(recipients)
	if len(recipients) == 0 {
		return nil, errors.New("no recipients: select clusters that have joined, or name --recipient")
	}
	if len(recipients) > MaxRecipients {
		return nil, fmt.Errorf("%d recipients, at most %d", len(recipients), MaxRecipients)
	}
	store, err := storeFor(format)
	if err != nil {
		return nil, err
	}
	branches, err := store.LoadPlainFile(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", format, err)
	}
	group := make(sops.KeyGroup, 0, len(recipients))
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	for _, r := range recipients {
		if err := CheckRecipient(r); err != nil {
			return nil, err
		}
		k, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, fmt.Errorf("age recipient %q: %w", r, err)
		}
		if err := k.Encrypt(dataKey); err != nil {
			return nil, fmt.Errorf("age recipient %q: %w", r, err)
		}
		group = append(group, k)
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:      []sops.KeyGroup{group},
		EncryptedRegex: EncryptedRegex,
		Version:        version.Version,
	}}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	tree.Metadata.LastModified = now.UTC().Truncate(time.Second)
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, fmt.Errorf("encrypt MAC: %w", err)
	}
	return store.EmitEncryptedFile(tree)
}

// checkSecret requires one document, a Secret with data or stringData, not already
// encrypted.
func checkSecret(doc []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("parse: %w", err)
		}
		if len(n.Content) > 0 {
			docs = append(docs, &n)
		}
		if len(docs) > 1 {
			return fmt.Errorf("%w: want one document per file, found more (encrypt each Secret in a file of its own)", ErrNotSecret)
		}
	}
	if len(docs) == 0 {
		return fmt.Errorf("%w: the file is empty", ErrNotSecret)
	}
	top := docs[0].Content[0]
	if top.Kind != yaml.MappingNode {
		return fmt.Errorf("%w: the document is not a mapping", ErrNotSecret)
	}
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		fields[top.Content[i].Value] = top.Content[i+1]
	}
	if _, ok := fields["sops"]; ok {
		return errors.New("already SOPS-encrypted: to change its recipients decrypt it with a recovery key first (see docs/secrets.md)")
	}
	kind, apiVersion := "", ""
	if n := fields["kind"]; n != nil {
		kind = n.Value
	}
	if n := fields["apiVersion"]; n != nil {
		apiVersion = n.Value
	}
	if kind != "Secret" || apiVersion != "v1" {
		return fmt.Errorf("%w: this is apiVersion %q kind %q, want apiVersion v1 kind Secret", ErrNotSecret, apiVersion, kind)
	}
	if fields["data"] == nil && fields["stringData"] == nil {
		return fmt.Errorf("%w: the Secret has neither data nor stringData, so there is nothing to encrypt", ErrNotSecret)
	}
	return nil
}

func storeFor(format string) (sops.Store, error) {
	switch format {
	case "yaml":
		return sopsyaml.NewStore(&config.YAMLStoreConfig{}), nil
	case "json":
		return json.NewStore(&config.JSONStoreConfig{}), nil
	}
	return nil, fmt.Errorf("format %q: want yaml or json", format)
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, r := range in {
		if r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
