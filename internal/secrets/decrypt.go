package secrets

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"

	"github.com/flotilla/flotilla/internal/secrets/sopsfile"
)

// ErrNotForThisKey: the document has no age stanza for the decryptor's recipient.
var ErrNotForThisKey = errors.New("not encrypted for")

// Decryptor decrypts SOPS documents with one age identity: a cluster's, or a recovery key.
// It implements render.Decryptor.
type Decryptor struct {
	// who names the key holder in errors: "cluster eu-1", "the key in recovery.txt".
	who       string
	identity  *age.X25519Identity
	recipient string
}

// NewDecryptor returns a decryptor for identity (AGE-SECRET-KEY-1...); who names its holder
// in errors ("cluster eu-1").
func NewDecryptor(who, identity string) (*Decryptor, error) {
	id, err := age.ParseX25519Identity(strings.TrimSpace(identity))
	if err != nil {
		return nil, fmt.Errorf("%s: age identity: %w", who, err)
	}
	return &Decryptor{who: who, identity: id, recipient: id.Recipient().String()}, nil
}

// Recipient is the public half of the decryptor's key.
func (d *Decryptor) Recipient() string { return d.recipient }

// Decrypt returns the plaintext of one SOPS document (format "yaml" or "json") without its
// sops metadata, after checking its MAC: nothing of a document that was changed after it
// was encrypted is returned. file is only for the caller's errors; errors here never hold a
// value of the document.
func (d *Decryptor) Decrypt(file string, doc []byte, format string) ([]byte, error) {
	if len(doc) > MaxEncryptedBytes {
		return nil, fmt.Errorf("%d bytes, at most %d", len(doc), MaxEncryptedBytes)
	}
	parsed, err := sopsfile.Parse(doc, format)
	if err != nil {
		return nil, err
	}
	dataKey, err := d.dataKey(parsed.Metadata)
	if err != nil {
		return nil, err
	}
	return parsed.Decrypt(dataKey)
}

// dataKey decrypts the data key from the age stanza of the decryptor's recipient.
func (d *Decryptor) dataKey(md sopsfile.Metadata) ([]byte, error) {
	var recipients []string
	for _, s := range md.Age {
		recipients = append(recipients, s.Recipient)
		if s.Recipient != d.recipient {
			continue
		}
		r, err := age.Decrypt(armor.NewReader(strings.NewReader(s.Enc)), d.identity)
		if err != nil {
			return nil, fmt.Errorf("%s: the data key in its age stanza does not decrypt: %w", d.who, err)
		}
		key, err := io.ReadAll(io.LimitReader(r, 64))
		if err != nil {
			return nil, fmt.Errorf("%s: the data key in its age stanza does not decrypt: %w", d.who, err)
		}
		if len(key) != 32 {
			return nil, fmt.Errorf("%s: the data key is %d bytes, want 32", d.who, len(key))
		}
		return key, nil
	}
	return nil, fmt.Errorf("%w %s (recipients: %s)", ErrNotForThisKey, d.who, listRecipients(recipients))
}

// listRecipients names at most five recipients, then how many more.
func listRecipients(rs []string) string {
	if len(rs) == 0 {
		return "no age recipients"
	}
	const show = 5
	if len(rs) <= show {
		return strings.Join(rs, ", ")
	}
	return strings.Join(rs[:show], ", ") + fmt.Sprintf(" and %d more", len(rs)-show)
}

// Recipients are the age recipients of an encrypted document, for messages and `flotilla
// secret` output.
func Recipients(doc []byte, format string) ([]string, error) {
	parsed, err := sopsfile.Parse(doc, format)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(parsed.Metadata.Age))
	for _, s := range parsed.Metadata.Age {
		out = append(out, s.Recipient)
	}
	return out, nil
}
