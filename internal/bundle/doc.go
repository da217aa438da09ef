// Package bundle reads and writes the files that carry a cluster's desired state to an
// air-gapped site and its reports back (docs/airgap.md).
//
// # Bundles
//
// A bundle is an uncompressed tar (its artifacts are gzip already) of, in this order:
//
//	manifest.json                      the Manifest: cluster, generation, creation time, the hub's
//	                                   highest ingested report seq, and the sha256 and size of
//	                                   every other entry
//	manifest.sig                       ECDSA P-256 / SHA-256 signature (ASN.1) by the hub's CA of
//	                                   "flotilla.dev/bundle/v1\n" followed by manifest.json's bytes
//	desired.pb                         the agentv1.DesiredState as the hub sends it over Watch
//	artifacts/sha256-<hex>.tar.gz      each artifact the desired state needs, in manifest order
//
// The signature covers the manifest and the manifest names the digest of everything else, so
// one signature covers the whole file. The reader checks it before it reads anything past the
// manifest, checks each entry against its digest and size while reading it, and refuses any
// entry out of place, missing, extra or over the Limits. The prefix of the signed message
// keeps a bundle signature from meaning anything else the CA key signs (certificates are DER).
//
// # Reports files
//
// A reports file carries an agent's unsent outbox to the hub: a tar of manifest.json
// (ReportsManifest), certificate.pem (the agent's client certificate), manifest.sig (by the
// agent's key over "flotilla.dev/reports/v1\n" and the manifest) and reports.pb (an
// agentv1.ReportRequest). The reader checks the signature against the certificate in the
// file; the hub then checks that certificate against its CA and its store, as it checks an
// agent's TLS certificate.
package bundle
