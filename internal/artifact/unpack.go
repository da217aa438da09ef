package artifact

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Limits bounds what Unpack accepts. A zero field takes its DefaultLimits
// value, so that a forgotten field never means "unlimited".
type Limits struct {
	// MaxFiles is the largest number of tar entries (files, directories,
	// symlinks and metadata entries alike).
	MaxFiles int
	// MaxBytes is the largest total size of file contents, uncompressed.
	MaxBytes int64
	// MaxFileBytes is the largest size of one file, uncompressed.
	MaxFileBytes int64
}

// headerAllowance is how many decompressed bytes each entry may use besides
// file contents (its 512-byte header, padding, a PAX record with a long
// name). The decompressed stream as a whole is capped at MaxBytes plus this
// per entry: archive/tar reads extension headers (PAX records, GNU long
// names) on its own, any number of them before it returns an entry, so
// counting file contents alone would let a bomb hide there.
const headerAllowance = 8 << 10

func (l Limits) maxStream() int64 {
	return l.MaxBytes + int64(l.MaxFiles+2)*headerAllowance
}

// DefaultLimits returns limits generous for a tree of manifests and small
// enough that an agent survives a malicious artifact.
func DefaultLimits() Limits {
	return Limits{
		MaxFiles:     10_000,
		MaxBytes:     256 << 20,
		MaxFileBytes: 64 << 20,
	}
}

// WithDefaults returns l with every zero field at its DefaultLimits value, so that a
// forgotten field never means "unlimited".
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	return l
}

// LimitError reports an archive over one of the Limits.
type LimitError struct {
	Entry string // the entry being read when the limit was hit
	Limit string // "files", "bytes", "file bytes" or "uncompressed archive bytes"
	Max   int64
}

func (e *LimitError) Error() string {
	if e.Entry == "" {
		return fmt.Sprintf("archive: over the limit of %d %s", e.Max, e.Limit)
	}
	return fmt.Sprintf("entry '%s': over the limit of %d %s", e.Entry, e.Max, e.Limit)
}

// Unpack reads the tar.gz stream r into dst, which must be absent or an empty
// directory. It refuses anything that could write outside dst or exhaust the
// agent (see the package documentation), naming the offending entry. On error
// dst is removed if Unpack created it, emptied otherwise.
//
// Unpack does not verify a digest; check the stream with a Verifier first.
func Unpack(ctx context.Context, r io.Reader, dst string, lim Limits) (err error) {
	lim = lim.WithDefaults()
	created, err := PrepareEmptyDir(dst)
	if err != nil {
		return fmt.Errorf("unpack into %s: %w", dst, err)
	}
	defer func() {
		if err == nil {
			return
		}
		if cerr := cleanup(dst, created); cerr != nil {
			err = errors.Join(err, fmt.Errorf("unpack into %s: clean up: %w", dst, cerr))
		}
	}()

	u := &unpacker{ctx: ctx, dst: dst, lim: lim}
	if err := u.run(r); err != nil {
		return fmt.Errorf("unpack into %s: %w", dst, err)
	}
	return nil
}

// PrepareEmptyDir makes sure dst is an empty directory, creating it if absent, and says
// whether it created it (so a failed write can remove it again). Unpack and the hub's Git
// checkout both write only into empty directories: nothing already there can be a trap.
func PrepareEmptyDir(dst string) (created bool, err error) {
	fi, err := os.Lstat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return false, err
		}
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.IsDir() {
		return false, errors.New("destination is not a directory")
	}
	d, err := os.Open(dst)
	if err != nil {
		return false, err
	}
	defer func() { _ = d.Close() }() // read only: Close has nothing to flush
	if _, err := d.Readdirnames(1); !errors.Is(err, io.EOF) {
		if err == nil {
			return false, errors.New("destination is not empty")
		}
		return false, err
	}
	return false, nil
}

func cleanup(dst string, created bool) error {
	if created {
		return os.RemoveAll(dst)
	}
	names, err := readDirNames(dst)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, os.RemoveAll(filepath.Join(dst, n)))
	}
	return errors.Join(errs...)
}

func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close() }() // read only: Close has nothing to flush
	return d.Readdirnames(-1)
}

type unpacker struct {
	ctx   context.Context
	dst   string
	lim   Limits
	files int
	bytes int64
}

func (u *unpacker) run(r io.Reader) error {
	gz, err := gzip.NewReader(&ctxReader{ctx: u.ctx, r: r})
	if err != nil {
		return fmt.Errorf("read gzip header: %w", err)
	}
	// One gzip member only: Pack writes one, and trailing members would only
	// be a way to hide data behind the tar end marker.
	gz.Multistream(false)
	stream := &capReader{r: gz, left: u.lim.maxStream()}
	tr := tar.NewReader(stream)
	var last string // the last entry read, to name in a stream-limit error
	for {
		if err := u.ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err == nil {
			last = hdr.Name
			u.files++
			if u.files > u.lim.MaxFiles {
				return &LimitError{Entry: hdr.Name, Limit: "files", Max: int64(u.lim.MaxFiles)}
			}
			err = u.entry(tr, hdr)
		} else {
			err = fmt.Errorf("read tar: %w", err)
		}
		if stream.over {
			return &LimitError{Entry: last, Limit: "uncompressed archive bytes", Max: u.lim.maxStream()}
		}
		if err != nil {
			return err
		}
	}
}

func (u *unpacker) entry(tr *tar.Reader, hdr *tar.Header) error {
	switch hdr.Typeflag {
	case tar.TypeXGlobalHeader:
		return nil // metadata for the whole archive, nothing to write
	case tar.TypeLink:
		return fmt.Errorf("entry '%s': hard links are not allowed", hdr.Name)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return fmt.Errorf("entry '%s': device and fifo entries are not allowed", hdr.Name)
	case tar.TypeDir, tar.TypeReg, tar.TypeSymlink:
	default:
		return fmt.Errorf("entry '%s': unsupported entry type %q", hdr.Name, hdr.Typeflag)
	}

	rel, err := cleanEntryName(hdr.Name)
	if err != nil {
		return err
	}
	if rel == "" {
		if hdr.Typeflag == tar.TypeDir {
			return nil // the root itself, e.g. "./"
		}
		return fmt.Errorf("entry '%s': names the destination itself", hdr.Name)
	}
	full, err := u.mkParents(hdr.Name, rel)
	if err != nil {
		return err
	}

	switch hdr.Typeflag {
	case tar.TypeDir:
		fi, err := os.Lstat(full)
		if err == nil {
			if fi.IsDir() {
				return nil // repeated directory entry
			}
			return fmt.Errorf("entry '%s': already exists and is not a directory", hdr.Name)
		}
		if err := os.Mkdir(full, 0o755); err != nil {
			return fmt.Errorf("entry '%s': %w", hdr.Name, err)
		}
		return nil
	case tar.TypeSymlink:
		if err := CheckSymlink(rel, hdr.Linkname); err != nil {
			return fmt.Errorf("entry '%s': %w", hdr.Name, err)
		}
		if err := os.Symlink(hdr.Linkname, full); err != nil {
			return fmt.Errorf("entry '%s': %w", hdr.Name, err)
		}
		return nil
	default:
		return u.file(tr, hdr, full)
	}
}

func (u *unpacker) file(tr *tar.Reader, hdr *tar.Header, full string) error {
	// The header's size is checked first so that an oversized entry is
	// refused before a single byte is written...
	if hdr.Size > u.lim.MaxFileBytes {
		return &LimitError{Entry: hdr.Name, Limit: "file bytes", Max: u.lim.MaxFileBytes}
	}
	if hdr.Size > u.lim.MaxBytes-u.bytes {
		return &LimitError{Entry: hdr.Name, Limit: "bytes", Max: u.lim.MaxBytes}
	}
	mode := fs.FileMode(0o644)
	if hdr.Mode&0o111 != 0 {
		mode = 0o755
	}
	// O_EXCL: never overwrite, and never follow a symlink planted earlier.
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, mode)
	if err != nil {
		return fmt.Errorf("entry '%s': %w", hdr.Name, err)
	}
	// ...and the bytes are counted again while copying, reading at most one
	// byte past the allowance, in case the reader yields more than the header
	// announced (as sparse entries may).
	allowance := min(u.lim.MaxFileBytes, u.lim.MaxBytes-u.bytes)
	n, err := io.Copy(f, io.LimitReader(tr, allowance+1))
	u.bytes += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("entry '%s': %w", hdr.Name, err)
	}
	if n > allowance {
		if n > u.lim.MaxFileBytes {
			return &LimitError{Entry: hdr.Name, Limit: "file bytes", Max: u.lim.MaxFileBytes}
		}
		return &LimitError{Entry: hdr.Name, Limit: "bytes", Max: u.lim.MaxBytes}
	}
	// Explicit chmod: the umask must not change what the agent applies.
	if err := os.Chmod(full, mode); err != nil {
		return fmt.Errorf("entry '%s': %w", hdr.Name, err)
	}
	return nil
}

// cleanEntryName turns a tar entry name into a slash-separated relative path
// without "." components, refusing absolute paths and ".." anywhere.
func cleanEntryName(name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("entry '%s': absolute path", name)
	}
	if strings.ContainsAny(name, "\\\x00") {
		return "", fmt.Errorf("entry '%s': backslash or NUL in path", name)
	}
	var parts []string
	for _, c := range strings.Split(name, "/") {
		switch c {
		case "", ".":
		case "..":
			return "", fmt.Errorf("entry '%s': '..' in path", name)
		default:
			parts = append(parts, c)
		}
	}
	return strings.Join(parts, "/"), nil
}

// mkParents makes sure every parent of rel is a real directory below dst,
// creating missing ones, and returns the full path of rel. Refusing a parent
// that is a symlink is what makes CheckSymlink's rule sufficient.
func (u *unpacker) mkParents(name, rel string) (string, error) {
	parts := strings.Split(rel, "/")
	cur := u.dst
	for _, c := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return "", fmt.Errorf("entry '%s': %w", name, err)
			}
		case err != nil:
			return "", fmt.Errorf("entry '%s': %w", name, err)
		case !fi.IsDir():
			return "", fmt.Errorf("entry '%s': parent '%s' is not a directory", name, filepath.ToSlash(mustRel(u.dst, cur)))
		}
	}
	return filepath.Join(cur, parts[len(parts)-1]), nil
}

func mustRel(base, p string) string {
	r, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	return r
}

// capReader fails once more than left bytes have been read.
type capReader struct {
	r    io.Reader
	left int64
	over bool
}

var errStreamLimit = errors.New("archive over its uncompressed size limit")

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, errStreamLimit
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// ctxReader stops a long read (a slow download, a huge stream) once ctx is
// done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
