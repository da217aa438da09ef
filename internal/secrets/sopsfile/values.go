package sopsfile

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// nonceSize is the AES-GCM nonce of a value the sops CLI writes (it reads any size).
const nonceSize = 32

// macOnlyEncryptedSeed starts the MAC of a document with mac_only_encrypted, so that its MAC
// never equals the MAC of the same values without it (the bytes the sops CLI uses).
var macOnlyEncryptedSeed = []byte{0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0xb, 0xb, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69}

var encValue = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`)

// ErrValue: a value that should be encrypted is not ciphertext, or not for its place in the
// document (its path is the ciphertext's associated data), or not for this data key.
var ErrValue = errors.New("decrypt values: a value under an encrypted key is not SOPS ciphertext, or not for this place in the document (edited by hand, or moved?)")

// sealValue encrypts text, of SOPS type typ, for the value at path ad.
func sealValue(key []byte, text, typ, ad string) (string, error) {
	gcm, err := newGCM(key, nonceSize)
	if err != nil {
		return "", err
	}
	iv := make([]byte, nonceSize)
	if _, err := rand.Read(iv); err != nil {
		return "", fmt.Errorf("nonce: %w", err)
	}
	out := gcm.Seal(nil, iv, []byte(text), []byte(ad))
	tag := len(out) - gcm.Overhead()
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:%s]", b64(out[:tag]), b64(iv), b64(out[tag:]), typ), nil
}

// openValue decrypts a value sealed for path ad, returning its text and SOPS type.
func openValue(key []byte, value, ad string) (text, typ string, err error) {
	m := encValue.FindStringSubmatch(value)
	if m == nil {
		return "", "", ErrValue
	}
	var parts [3][]byte
	for i := range parts {
		if parts[i], err = base64.StdEncoding.DecodeString(m[i+1]); err != nil {
			return "", "", ErrValue
		}
	}
	data, iv, tag := parts[0], parts[1], parts[2]
	if len(iv) == 0 || len(tag) != 16 {
		return "", "", ErrValue
	}
	gcm, err := newGCM(key, len(iv))
	if err != nil {
		return "", "", err
	}
	plain, err := gcm.Open(nil, iv, append(data, tag...), []byte(ad))
	if err != nil {
		return "", "", ErrValue
	}
	return string(plain), m[4], nil
}

func newGCM(key []byte, nonce int) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	return cipher.NewGCMWithNonceSize(block, nonce)
}

// typed is a scalar as the SOPS tree holds it: its type name and its bytes as the MAC reads
// them.
type typed struct {
	typ  string // str, int, float, bool, time, bytes, comment
	text string
}

// typedOf reads a scalar node as sops does (the same YAML library's decoding); ok is false for
// a null, which is neither encrypted nor in the MAC.
func typedOf(n *yaml.Node) (t typed, ok bool, err error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return typed{}, false, err
	}
	switch v := v.(type) {
	case nil:
		return typed{}, false, nil
	case string:
		return typed{"str", v}, true, nil
	case []byte:
		return typed{"str", string(v)}, true, nil
	case int:
		return typed{"int", strconv.Itoa(v)}, true, nil
	case float64:
		return typed{"float", strconv.FormatFloat(v, 'f', -1, 64)}, true, nil
	case bool:
		return typed{"bool", boolText(v)}, true, nil
	case time.Time:
		b, err := v.MarshalText()
		return typed{"time", string(b)}, true, err
	default:
		return typed{}, false, fmt.Errorf("line %d: a value of type %T, which SOPS cannot hold (an integer beyond 64 bits?)", n.Line, v)
	}
}

// boolText is a bool as the MAC reads it (as SOPS's first, Python, version wrote it).
func boolText(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// fromCipher reads the text of a decrypted value of type typ: its MAC bytes and the scalar
// node it becomes, encoded from its Go value as the sops CLI encodes it (a float of no
// fraction reads back as an integer there, and so here).
func fromCipher(text, typ string) (mac string, node *yaml.Node, err error) {
	var v any
	switch typ {
	case "str", "bytes":
		v, mac = text, text
	case "int":
		i, err := strconv.Atoi(text)
		if err != nil {
			return "", nil, ErrValue
		}
		v, mac = i, strconv.Itoa(i)
	case "float":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return "", nil, ErrValue
		}
		v, mac = f, strconv.FormatFloat(f, 'f', -1, 64)
	case "bool":
		b, err := strconv.ParseBool(text)
		if err != nil {
			return "", nil, ErrValue
		}
		v, mac = b, boolText(b)
	case "time":
		var t time.Time
		if err := t.UnmarshalText([]byte(text)); err != nil {
			return "", nil, ErrValue
		}
		b, _ := t.MarshalText()
		v, mac = t, string(b)
	case "comment":
		return "", nil, nil
	default:
		return "", nil, ErrValue
	}
	node = &yaml.Node{}
	if err := node.Encode(v); err != nil {
		return "", nil, ErrValue
	}
	return mac, node, nil
}

// stripComments drops every comment of n: a decrypted document is read by programs, and its
// comments may be ciphertext.
func stripComments(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		stripComments(c)
	}
}

// walker visits every scalar of a document in the order sops's tree walk does, with its path
// (the keys above it; a sequence's items share the sequence's path). visit may replace the
// scalar, or drop it from its sequence (nil).
type walker func(n *yaml.Node, path []string) (*yaml.Node, error)

func (w walker) node(n *yaml.Node, path []string) (*yaml.Node, error) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || (k.ShortTag() != "!!str" && k.ShortTag() != "!!merge") {
				return nil, fmt.Errorf("line %d: a key that is not a string (%s): SOPS documents have string keys only", k.Line, k.ShortTag())
			}
			v, err := w.node(n.Content[i+1], append(path[:len(path):len(path)], k.Value))
			if err != nil {
				return nil, err
			}
			if v == nil {
				v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
			}
			n.Content[i+1] = v
		}
		return n, nil
	case yaml.SequenceNode:
		items := n.Content[:0]
		for _, item := range n.Content {
			v, err := w.node(item, path)
			if err != nil {
				return nil, err
			}
			if v != nil {
				items = append(items, v)
			}
		}
		n.Content = items
		return n, nil
	case yaml.ScalarNode:
		return w(n, path)
	}
	return n, nil
}

// maxNodes bounds a document's nodes once its aliases are copied in place: a few hundred
// bytes of nested aliases would otherwise expand to billions.
const maxNodes = 1 << 20

// expandAliases replaces every alias under n with a copy of its target, as sops's tree holds
// it: the copy is a value of its own, encrypted for its own path. It runs before any value
// changes, so that copies are of the plaintext.
func expandAliases(n *yaml.Node, budget *int) error {
	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode {
			cp, err := deepCopy(c.Alias, budget)
			if err != nil {
				return err
			}
			n.Content[i] = cp
			continue
		}
		if *budget--; *budget < 0 {
			return fmt.Errorf("more than %d values with its aliases copied in place (an alias bomb?)", maxNodes)
		}
		if err := expandAliases(c, budget); err != nil {
			return err
		}
	}
	return nil
}

func deepCopy(n *yaml.Node, budget *int) (*yaml.Node, error) {
	if n.Kind == yaml.AliasNode {
		return deepCopy(n.Alias, budget)
	}
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("more than %d values with its aliases copied in place (an alias bomb?)", maxNodes)
	}
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		var err error
		if c.Content[i], err = deepCopy(child, budget); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// adOf is the associated data of the value at path: its keys, each followed by a colon.
func adOf(path []string) string { return strings.Join(path, ":") + ":" }

// newMAC is the hash a document's MAC is made of.
func (r rules) newMAC() hash.Hash {
	h := sha512.New()
	if r.macOnlyEncrypted {
		h.Write(macOnlyEncryptedSeed)
	}
	return h
}
