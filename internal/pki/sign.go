package pki

import "crypto"

// Signer returns the CA's key as a crypto.Signer, for what the hub signs besides
// certificates: offline bundles (internal/bundle), whose signed message starts with a format
// prefix so that it can never be read as a certificate. The key itself stays unexported.
func (ca *CA) Signer() crypto.Signer { return ca.key }
