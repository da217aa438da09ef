package bundle

import (
	"archive/tar"
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// entryTime is the modification time of every entry written, so that the same contents make
// the same bytes.
var entryTime = time.Unix(0, 0).UTC()

// writeEntry writes one regular file entry of size bytes from r.
func writeEntry(tw *tar.Writer, name string, size int64, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, ModTime: entryTime, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	n, err := io.Copy(tw, io.LimitReader(r, size))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("%s: %d bytes, want %d (changed while it was written?)", name, n, size)
	}
	return nil
}

// reader reads a container's entries in order, each once, refusing anything but regular
// files and anything past the byte budget.
type reader struct {
	what   string // "bundle", "reports file": the start of every error
	tr     *tar.Reader
	budget *budgetReader
}

func newReader(what string, r io.Reader, maxBytes int64) *reader {
	b := &budgetReader{r: r, left: maxBytes, what: what, max: maxBytes}
	return &reader{what: what, tr: tar.NewReader(b), budget: b}
}

// next returns the next entry, which must be called name (name == "": any name, returned)
// and hold at most max bytes.
func (rd *reader) next(name string, max int64) (*tar.Header, error) {
	hdr, err := rd.tr.Next()
	if errors.Is(err, io.EOF) {
		if name == "" {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("%s: ends before %s", rd.what, name)
	}
	if err != nil {
		if rd.budget.exceeded {
			return nil, rd.budget.err()
		}
		return nil, fmt.Errorf("%s: not a valid archive (want %s): %w", rd.what, orAny(name), err)
	}
	if name != "" && hdr.Name != name {
		return nil, fmt.Errorf("%s: entry %q where %s belongs", rd.what, hdr.Name, name)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("%s: entry %q is not a regular file (type %q)", rd.what, hdr.Name, hdr.Typeflag)
	}
	if hdr.Size < 0 || hdr.Size > max {
		return nil, fmt.Errorf("%s: entry %q is %d bytes; at most %d", rd.what, hdr.Name, hdr.Size, max)
	}
	return hdr, nil
}

func orAny(name string) string {
	if name == "" {
		return "an entry"
	}
	return name
}

// readAll reads the entry name whole (small entries: manifests, signatures).
func (rd *reader) readAll(name string, max int64) ([]byte, error) {
	hdr, err := rd.next(name, max)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(rd.tr)
	if err != nil {
		return nil, rd.readErr(name, err)
	}
	if int64(len(data)) != hdr.Size {
		return nil, fmt.Errorf("%s: %s truncated", rd.what, name)
	}
	return data, nil
}

func (rd *reader) readErr(name string, err error) error {
	if rd.budget.exceeded {
		return rd.budget.err()
	}
	return fmt.Errorf("%s: %s: %w", rd.what, name, err)
}

// end checks that nothing follows the last entry but the archive's end and zero padding.
func (rd *reader) end() error {
	hdr, err := rd.tr.Next()
	if err == nil {
		return fmt.Errorf("%s: unexpected entry %q after the last one the manifest names", rd.what, hdr.Name)
	}
	if !errors.Is(err, io.EOF) {
		return rd.readErr("end of archive", err)
	}
	// tar tools pad an archive to a record size with zeros; anything else is not ours.
	var buf [4096]byte
	for {
		n, err := rd.budget.Read(buf[:])
		if !allZero(buf[:n]) {
			return fmt.Errorf("%s: data after the end of the archive", rd.what)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return rd.readErr("end of archive", err)
		}
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// budgetReader fails once more than max bytes were read: the bound of the whole file.
type budgetReader struct {
	r        io.Reader
	left     int64
	max      int64
	what     string
	exceeded bool
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a file of exactly max bytes from a longer one.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			b.exceeded = true
			return 0, b.err()
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *budgetReader) err() error { return &TooLargeError{What: b.what, Max: b.max} }

// TooLargeError is a file over its bound (Limits.MaxBytes, ReportsLimits.MaxBytes).
type TooLargeError struct {
	What string // "bundle", "reports file"
	Max  int64
}

func (e *TooLargeError) Error() string { return fmt.Sprintf("%s: larger than %d bytes", e.What, e.Max) }

// decodeStrict decodes one JSON document into v, refusing unknown fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the document")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the document")
	}
	return nil
}

// signedMessage is what a signature covers: a prefix naming the format, then the manifest.
func signedMessage(format string, manifest []byte) []byte {
	return append([]byte(format+"\n"), manifest...)
}

// sign signs the manifest with an ECDSA P-256 key, SHA-256.
func sign(key crypto.Signer, format string, manifest []byte) ([]byte, error) {
	pub, ok := key.Public().(*ecdsa.PublicKey)
	if !ok || pub.Curve.Params().Name != "P-256" {
		return nil, errors.New("signing key is not ECDSA P-256")
	}
	sum := sha256.Sum256(signedMessage(format, manifest))
	return key.Sign(rand.Reader, sum[:], crypto.SHA256)
}

// verify checks a manifest's signature against cert's public key.
func verify(cert *x509.Certificate, format string, manifest, sig []byte) error {
	return cert.CheckSignature(x509.ECDSAWithSHA256, signedMessage(format, manifest), sig)
}

// Fingerprint is the lowercase hex SHA-256 of a certificate's DER encoding (pki's CA
// fingerprint).
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

// FileDigest names the contents of an entry.
type FileDigest struct {
	SHA256 string `json:"sha256"` // lowercase hex
	Size   int64  `json:"size"`
}

func digestOf(data []byte) FileDigest {
	sum := sha256.Sum256(data)
	return FileDigest{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))}
}

func (d FileDigest) check(what, name string, data []byte) error {
	got := digestOf(data)
	if got.Size != d.Size {
		return fmt.Errorf("%s: %s is %d bytes, the manifest says %d", what, name, got.Size, d.Size)
	}
	if got.SHA256 != d.SHA256 {
		return fmt.Errorf("%s: %s does not match the manifest: sha256 %s, want %s", what, name, got.SHA256, d.SHA256)
	}
	return nil
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// checkFormat reads the manifest's format alone, so that a file of another kind or version is
// named as such rather than by its first unknown field.
func checkFormat(manifest []byte, want string) error {
	var f struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(manifest, &f); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if f.Format != want {
		return fmt.Errorf("format %q, want %q", f.Format, want)
	}
	return nil
}
