package secrets

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	yaml "go.yaml.in/yaml/v3"

	"github.com/flotilla/flotilla/internal/secrets/sopsfile"
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
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	md := sopsfile.Metadata{Rules: sopsfile.Rules{EncryptedRegex: EncryptedRegex}}
	for _, r := range recipients {
		if err := CheckRecipient(r); err != nil {
			return nil, err
		}
		s, err := wrapDataKey(dataKey, r)
		if err != nil {
			return nil, fmt.Errorf("age recipient %q: %w", r, err)
		}
		md.Age = append(md.Age, s)
	}
	out, err := sopsfile.Encrypt(doc, format, dataKey, md, now)
	if err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	return out, nil
}

// wrapDataKey encrypts the data key to an age recipient, ASCII-armored, as a SOPS age stanza
// holds it.
func wrapDataKey(dataKey []byte, recipient string) (sopsfile.AgeStanza, error) {
	rcpt, err := age.ParseX25519Recipient(recipient)
	if err != nil {
		return sopsfile.AgeStanza{}, err
	}
	var b bytes.Buffer
	aw := armor.NewWriter(&b)
	w, err := age.Encrypt(aw, rcpt)
	if err != nil {
		return sopsfile.AgeStanza{}, err
	}
	if _, err := w.Write(dataKey); err != nil {
		return sopsfile.AgeStanza{}, err
	}
	if err := w.Close(); err != nil {
		return sopsfile.AgeStanza{}, err
	}
	if err := aw.Close(); err != nil {
		return sopsfile.AgeStanza{}, err
	}
	return sopsfile.AgeStanza{Recipient: recipient, Enc: b.String()}, nil
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

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, r := range in {
		if r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
