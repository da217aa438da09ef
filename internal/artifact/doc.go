// Package artifact packs a directory tree into an immutable, content-addressed
// tarball, stores such tarballs on disk, and verifies and unpacks them safely.
//
// # Format
//
// An artifact is a gzip-compressed tar stream produced by [Pack]. It is
// deterministic: the same tree always gives the same bytes, and so the same
// digest, whatever the file times, owners, umask or directory walk order.
// To get there Pack
//
//   - sorts entries by name: the slash-separated path, with a trailing slash
//     for directories (so a directory comes right before its contents);
//   - keeps regular files, directories and symlinks that stay inside the tree
//     (see [CheckSymlink]); any other file type is an error, and every entry
//     named .git is skipped with all it contains;
//   - writes mode 0644 for files, 0755 for directories and for files with any
//     executable bit, 0777 for symlinks; mtime is the Unix epoch; uid and gid
//     are 0 and user and group names are empty;
//   - writes a gzip header with no name, no mtime and the "unknown" OS.
//
// The digest is "sha256:" followed by the lowercase hex SHA-256 of the
// compressed bytes, so an agent can check a download before it decompresses
// anything ([Verifier], [VerifyFile]). Byte-for-byte reproducibility holds for
// one Go toolchain: a new compress/flate could, in principle, compress the
// same tree differently, which changes digests but never correctness.
//
// # Store
//
// A [Store] keeps artifacts under <dir>/sha256/<hex>.tar.gz. Writes go to a
// temporary file in the same directory and are renamed into place, so readers
// never see a partial artifact and concurrent puts of the same tree are
// harmless. [Store.Path] accepts only well-formed digests, so a crafted
// digest cannot name a file outside the store.
//
// # Unpack
//
// [Unpack] is meant for agents, which must not trust the bytes they are
// given even after verification (a hub can be compromised). It refuses
// absolute paths, ".." components, symlinks that could resolve outside the
// destination, hard links, devices and fifos, entries below a symlink, and
// archives over the [Limits]. Sizes are checked against tar headers before
// anything is written and counted again while copying, and the decompressed
// stream as a whole (headers included, which archive/tar reads on its own)
// is capped too, so a decompression bomb is stopped early. On any error the
// destination is left as it was found: absent or empty.
package artifact
