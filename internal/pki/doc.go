// Package pki is the hub's certificate authority: it keeps the CA on disk, issues the hub's
// serving certificates and the agents' client certificates, verifies agents' certificates, and
// creates and parses the one-time join tokens through which an agent gets its first
// certificate.
//
// # Trust model
//
// Agents always connect out to the hub, over mutual TLS. The hub runs its own CA
// (ECDSA P-256, created by [LoadOrCreateCA] on first start) and trusts nothing else for
// client certificates. The identity of a request is the cluster named in the client
// certificate's URI SAN, flotilla://cluster/<name>, as returned by [CA.VerifyAgent]; the
// hub then checks the certificate's serial against its store, so that revoking a cluster
// needs no CRL.
//
// # Joining
//
// An operator asks the hub for a join token for cluster c ([NewJoinToken]); the hub stores
// the token's ID, [SecretHash] of its secret, the cluster and an expiry, and the operator
// passes [JoinToken.Encode] to the agent. The agent:
//
//  1. parses the token ([ParseJoinToken]);
//  2. connects to the hub with [PinnedVerifier] on the token's CA fingerprint prefix, since it
//     does not have the CA yet, and fetches the CA certificate over that connection;
//  3. creates its own key ([NewAgentKey]) and a CSR ([CreateCSR]) — the key never leaves the
//     cluster — and sends the CSR with the token's ID and secret;
//  4. receives a certificate the hub signed with [CA.SignAgentCSR], which sets the identity
//     from the token's cluster, whatever the CSR asked for.
//
// Expiry and single use of a token are the hub store's business: the token string itself
// carries neither, so that only the hub decides.
//
// # Rotation
//
// An agent renews its certificate over its existing mTLS connection once
// [NeedsRenewal] reports that two thirds of its lifetime have passed, which leaves a third
// of the lifetime to retry through hub outages.
//
// # Join token format
//
//	flt1.<cluster>.<id>.<secret>.<pin>
//
// where <cluster> is the cluster name in unpadded base64url, <id> 16 lowercase hex
// characters (8 random bytes), <secret> 43 characters of unpadded base64url (32 random
// bytes) and <pin> the first 32 lowercase hex characters of the SHA-256 fingerprint of the
// hub CA certificate. No field can contain a dot, so the string splits one way only, whatever
// the cluster name.
//
// # Cluster names
//
// A cluster name is a DNS-1123 subdomain, as for Kubernetes object names: at most 253
// characters, lowercase letters, digits, '-' and '.', each dot-separated part starting and
// ending with a letter or digit. That keeps it safe inside a URI and a certificate subject.
//
// # Time
//
// Every function that depends on the time takes it as an argument, so callers pass their
// clock and tests need not sleep. Certificates are backdated by a few minutes to tolerate
// clock skew between hub and agents, and never outlive the CA.
package pki
