package secrets

// Export returns what NewDecryptor was given: the holder's label and the age identity, so
// that a render child process can rebuild the decryptor (the identity goes to it on a pipe,
// never on argv or in the environment).
func (d *Decryptor) Export() (who, identity string) { return d.who, d.identity.String() }
