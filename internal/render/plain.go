package render

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
)

// readPlain reads every manifest file under dir (rel inside root) in path order, SOPS
// documents decrypted as dec says. maxBytes, when above zero, bounds the files read: past it
// the error is errNeedsChild, with no more of them read.
func readPlain(ctx context.Context, root, rel, dir string, dec decryption, maxBytes int64) ([]object, error) {
	files, err := plainWalker(root).walk(ctx, rel, dir)
	if err != nil {
		return nil, err
	}
	var objs []object
	left := maxBytes
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if isKustomizationFile(path.Base(f.rel)) {
			// Reading it as an object would fail with "missing metadata.name"; say what to do.
			return nil, &Error{File: f.rel, Err: errors.New("kustomization below a plain directory: render its directory as the path, or add a kustomization at the path that lists it")}
		}
		data, err := readFile(f.real, maxBytes > 0, &left)
		if errors.Is(err, errNeedsChild) {
			return nil, err
		}
		if err != nil {
			return nil, &Error{File: f.rel, Err: err}
		}
		if data, err = dec.file(f.rel, data); err != nil {
			return nil, err
		}
		if objs, err = decodeFile(f.rel, data, objs); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// plainWalker lists the files a plain directory's render reads: its manifests, and the
// kustomization files it refuses to read as objects.
func plainWalker(root string) *walker {
	return &walker{
		root: root,
		skip: func(name string, _ bool) bool { return isHidden(name) },
		want: func(name string) bool { return isManifest(name) || isKustomizationFile(name) },
		problem: func(rel string, isDir bool, cause error) error {
			if !isDir && !isManifest(path.Base(rel)) {
				return nil // never read, so harmless
			}
			return &Error{File: rel, Err: cause}
		},
	}
}

// readFile reads the file at p; when bounded, at most *left bytes (counted down), else
// errNeedsChild.
func readFile(p string, bounded bool, left *int64) ([]byte, error) {
	if !bounded {
		return os.ReadFile(p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	data, err := io.ReadAll(io.LimitReader(f, *left+1))
	if err != nil {
		return nil, err
	}
	if *left -= int64(len(data)); *left < 0 {
		return nil, errNeedsChild
	}
	return data, nil
}
