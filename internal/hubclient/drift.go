package hubclient

// DriftField is one drifted field of a DriftedObject: the desired and the live value as JSON
// ("" when absent on that side; "(redacted)" for a Secret's), and the field manager that
// wrote the live value, from the object's managedFields ("" when the field is gone live or
// no entry names it).
type DriftField struct {
	Path    string `json:"path"`
	Desired string `json:"desired,omitempty"`
	Live    string `json:"live,omitempty"`
	Manager string `json:"manager,omitempty"`
}
