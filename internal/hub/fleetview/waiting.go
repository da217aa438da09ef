package fleetview

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/hub/store"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// held is what an agent's Waiting report says holds the release back: the message and the
// revision and artifact the gate keeps from being applied ("" when nothing newer waits, as
// for a release that waits for another before its first apply).
type held struct {
	message                 string
	pendingRevision, digest string
}

// heldBy reads a Waiting report's detail (store.AssignmentStatus.Detail, the agent's
// AssignmentStatus as protojson). Only Waiting reports are decoded, so that the views of a
// fleet where nothing waits cost no decoding; a detail that cannot be read says so in the
// message rather than hiding that the release waits.
func heldBy(s *store.AssignmentStatus) held {
	if !bytes.Contains(s.Detail, []byte(`"waiting"`)) && !bytes.Contains(s.Detail, []byte(`"pending`)) {
		return held{message: "the agent did not say what for"}
	}
	var st agentv1.AssignmentStatus
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(s.Detail, &st); err != nil {
		return held{message: "the agent's report is unreadable: " + err.Error()}
	}
	h := held{message: st.GetWaiting(), pendingRevision: st.GetPendingRevision(), digest: st.GetPendingDigest()}
	if h.message == "" {
		h.message = "the agent did not say what for"
	}
	return h
}
