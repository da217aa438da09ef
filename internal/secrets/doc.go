// Package secrets encrypts Kubernetes Secret manifests with SOPS for the age keys of the
// clusters that may read them, and decrypts SOPS documents with one cluster's age identity.
//
// Each agent generates an X25519 age key pair when it joins (NewKey); the identity never
// leaves its state dir and the hub records only the recipient (the public half). `flotilla
// secret encrypt` asks the hub for the recipients of the selected clusters and calls Encrypt,
// which writes what the sops CLI writes for
//
//	sops --encrypt --age R1,R2,... --encrypted-regex '^(data|stringData)$'
//
// so metadata stays readable in Git and either tool reads the other's files. The agent
// decrypts with Decryptor, which reads the data key from the age stanza of its own
// recipient only (never from the environment, as the sops CLI does) and checks the
// document's MAC before it returns any plaintext.
//
// The library packages of sops used here (core, aes, age, stores) import every key service
// sops supports, so the cloud KMS SDKs are linked in even though only age is ever used.
package secrets
