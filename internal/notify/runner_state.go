package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
)

// load reads the persisted state; a missing or unreadable file starts afresh (an unreadable
// one is logged: the notifications then re-announce what is wrong now).
func (r *Runner) load() {
	data, err := os.ReadFile(r.d.StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var states map[string]State
	if err == nil {
		err = json.Unmarshal(data, &states)
	}
	if err != nil {
		r.log.Warn("notifications: state unreadable; starting afresh", "file", r.d.StateFile, "error", err)
		return
	}
	r.states, r.saved = states, data
}

// save writes the state when it changed, atomically (a new file renamed over the old).
func (r *Runner) save() {
	data, err := json.Marshal(r.states)
	if err != nil || bytes.Equal(data, r.saved) {
		return
	}
	tmp := r.d.StateFile + ".tmp"
	// err is the outer one: a failed write or rename is logged and the state is saved again next time.
	if err = os.WriteFile(tmp, data, 0o600); err == nil {
		err = os.Rename(tmp, r.d.StateFile)
	}
	if err != nil {
		r.log.Warn("notifications: state not saved", "error", err)
		return
	}
	r.saved = data
}
