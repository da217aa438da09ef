package hubclient

// AssignmentDetail is one release on one cluster as its agent last reported it: the status
// `flotilla status` shows, what the hub asks of the cluster, and every object the agent
// reported on. Agents detail only the objects that need a look (not Current, drifted, in
// conflict, failed), so Objects lists those; the others are counted in Assignment.Objects.
// Nothing here is read from the cluster.
type AssignmentDetail struct {
	Assignment AssignmentView  `json:"assignment"`
	Desired    DesiredSettings `json:"desired"`
	// Reported: the agent has reported on this assignment; the fields below are from its last
	// report (at Assignment.ReportedAt), empty before.
	Reported        bool    `json:"reported"`
	Created         int32   `json:"created"`
	Configured      int32   `json:"configured"`
	Pruned          int32   `json:"pruned"`
	DurationSeconds float64 `json:"durationSeconds"`
	// ConflictTexts name each conflict's object, field and owner.
	ConflictTexts []string     `json:"conflictTexts"`
	Objects       []ObjectView `json:"objects"`
	// ObjectsOmitted counts objects that needed a look but were left out of the report by the
	// agent's bounds.
	ObjectsOmitted int `json:"objectsOmitted"`
}

// DesiredSettings are the assignment's settings in the cluster's desired state.
type DesiredSettings struct {
	Source    string `json:"source"`
	Path      string `json:"path"`
	Namespace string `json:"namespace,omitempty"`
	Prune     bool   `json:"prune"`
	SelfHeal  bool   `json:"selfHeal"`
	Wait      bool   `json:"wait"`
	Timeout   string `json:"timeout"`
	Interval  string `json:"interval"`
}

// ObjectView is one object of an assignment as the agent reported it.
type ObjectView struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Object is the kubectl form: deployment.apps/web.
	Object string `json:"object"`
	// Action is what the last reconcile did: created, configured, unchanged, healed,
	// drifted, conflict.
	Action        string          `json:"action,omitempty"`
	Health        string          `json:"health,omitempty"`
	HealthMessage string          `json:"healthMessage,omitempty"`
	Drift         []FieldDrift    `json:"drift"`
	Conflicts     []FieldConflict `json:"conflicts"`
	Error         string          `json:"error,omitempty"`
	// FieldsOmitted counts drift and conflict entries the agent left out.
	FieldsOmitted int `json:"fieldsOmitted,omitempty"`
}

// FieldDrift is one drifted field: the desired and the live value as JSON ("" when the field
// is absent on that side, or not reported by an older agent).
type FieldDrift struct {
	Path    string `json:"path"`
	Desired string `json:"desired"`
	Live    string `json:"live"`
	// Manager is the field manager that wrote the live value, when the agent could tell.
	Manager string `json:"manager,omitempty"`
}

// FieldConflict is a field the object declares and the owner that holds it.
type FieldConflict struct {
	Field string `json:"field"`
	Owner string `json:"owner"`
}

// assignmentDetail answers GET /api/v1/clusters/{name}/releases/{release}.
