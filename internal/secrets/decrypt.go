package secrets

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
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
	store, tree, err := loadEncrypted(doc, format)
	if err != nil {
		return nil, err
	}
	dataKey, err := d.dataKey(tree.Metadata)
	if err != nil {
		return nil, err
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		return nil, errors.New("decrypt values: a value under an encrypted key is not SOPS ciphertext, or not for this place in the document (edited by hand, or moved?)")
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, errors.New("MAC: cannot decrypt the stored MAC (was lastmodified or mac edited?)")
	}
	if stored != mac {
		// The MACs are hashes of the plaintext: they stay out of the message.
		return nil, errors.New("MAC mismatch: the document changed after it was encrypted (a value, a key, their order, or a plaintext field such as metadata)")
	}
	return store.EmitPlainFile(tree.Branches)
}

// dataKey decrypts the data key from the age stanza of the decryptor's recipient.
func (d *Decryptor) dataKey(md sops.Metadata) ([]byte, error) {
	if len(md.KeyGroups) != 1 {
		return nil, fmt.Errorf("%d key groups (Shamir secret sharing): only one group of age keys is supported", len(md.KeyGroups))
	}
	var recipients []string
	for _, k := range md.KeyGroups[0] {
		ak, ok := k.(*sopsage.MasterKey)
		if !ok {
			continue
		}
		recipients = append(recipients, ak.Recipient)
		if strings.TrimSpace(ak.Recipient) != d.recipient {
			continue
		}
		r, err := age.Decrypt(armor.NewReader(strings.NewReader(ak.EncryptedKey)), d.identity)
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
	_, tree, err := loadEncrypted(doc, format)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range tree.Metadata.KeyGroups {
		for _, k := range g {
			if ak, ok := k.(*sopsage.MasterKey); ok {
				out = append(out, ak.Recipient)
			}
		}
	}
	return out, nil
}

// loadEncrypted parses an encrypted document of format "yaml" or "json" with its store.
func loadEncrypted(doc []byte, format string) (sops.Store, sops.Tree, error) {
	store, err := storeFor(format)
	if err != nil {
		return nil, sops.Tree{}, err
	}
	tree, err := store.LoadEncryptedFile(doc)
	if err != nil {
		return nil, sops.Tree{}, fmt.Errorf("SOPS metadata: %w", err)
	}
	return store, tree, nil
}
