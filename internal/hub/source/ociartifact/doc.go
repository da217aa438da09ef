// Package ociartifact fetches OCI artifact sources (Source.spec.oci) for the hub: manifests
// pushed to a registry with `flux push artifact` or `oras push`, optionally verified with
// cosign before anything is unpacked.
//
// # Resolution
//
// A source names a repository (oci://registry[:port]/repository) and one of a tag, a semver
// range or a digest; none means the tag "latest". A tag is resolved with a HEAD request; a
// range lists the repository's tags (at most MaxTags), keeps those that parse as versions and
// satisfy it (pre-releases only when the range names one), and tries them newest first. The
// revision is "<tag>@sha256:<hex>" (the manifest digest), or the digest alone for a pin.
//
// # Verification
//
// With verify.cosign.publicKeys, the manifest digest must carry a cosign signature by one of
// the named keys, which the hub's operator configured (flotilla hub --verify-key NAME=FILE):
// a fleet commit cannot bring its own trust. The signature layout is the one cosign v2 writes
// by default: an image manifest tagged sha256-<hex>.sig in the same repository, one
// simple-signing payload layer per signature, the signature in the
// dev.cosignproject.cosign/signature annotation. A signature counts when it verifies with the
// key over the payload and the payload names the digest being fetched (a signature copied
// from another artifact is refused). Verification is key-based only: no transparency log, no
// Fulcio certificate, nothing that needs a network beyond the registry, so it works on an
// air-gapped site with a local mirror. The payload's docker-reference is not checked, so an
// artifact copied to a mirror with its signature (cosign copy) still verifies.
//
// For a range, the newest satisfying version that is signed is taken; newer ones that are not
// are skipped, and Fetched.Verified["skipped"] says which and why (it reaches the audit
// trail). For a tag or digest, a missing or bad signature is an error: the controller keeps the
// last artifact in force and shows the error as the source's.
//
// Keys are compared, not trusted blindly: ECDSA P-256 (what cosign generate-key-pair makes)
// and RSA (PKCS #1 v1.5) verify the payload's SHA-256, Ed25519 the payload itself, as cosign
// signs with each. They are checked with the standard library's crypto packages rather than
// sigstore's: the hub needs one verification, and sigstore/sigstore would bring its module
// graph (and a Go version floor) into the hub for it. The tests check compatibility against
// the real cosign CLI.
//
// # The artifact
//
// The manifest must be an image manifest (OCI or Docker) with exactly one layer of media type
// application/vnd.cncf.flux.content.v1.tar+gzip (flux push artifact),
// application/vnd.oci.image.layer.v1.tar+gzip (oras push of a directory) or
// application/vnd.oci.image.layer.v1.tar (oras push of a file, plain or gzipped tar). An
// index, several layers or another media type is refused naming the digest. The layer is
// read into a temporary file (at most MaxLayerBytes) and checked against its digest before
// anything is unpacked; it is unpacked with the agents' hardened unpacker (artifact.Unpack):
// bounded files and bytes, no absolute or ".." paths, no symlinks out of the tree, no devices
// or hard links. An oras directory keeps its name as the top directory, as `oras pull` would
// write it.
//
// # Transport
//
// Plain HTTP only with insecure: go-containerregistry falls back to http:// by itself for
// loopback and private addresses, which the fetcher's transport refuses unless the source
// says insecure. Named credentials go to the registry the operator listed them for, and to a
// token service the registry names only if that host is listed too.
package ociartifact
