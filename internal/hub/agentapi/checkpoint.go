package agentapi

import (
	"context"
	"strings"
	"time"

	"github.com/flotilla/flotilla/internal/audit"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// checkpointInterval is the audit checkpoint interval in force: Options.AuditCheckpoint, or
// the default when it is zero. A negative interval turns checkpoints off.
func (s *Server) checkpointInterval() time.Duration {
	if s.o.AuditCheckpoint == 0 {
		return audit.DefaultCheckpointInterval
	}
	return s.o.AuditCheckpoint
}

// checkpoint applies check c to the audit checkpoint of release on cluster and returns the
// checkpoint after it, what to record and the window that record closes (audit.Step). With
// checkpoints off, or when the checkpoint cannot be read or written, every check is
// recorded in full.
func (s *Server) checkpoint(ctx context.Context, cluster, release string, c audit.Check) (audit.Checkpoint, audit.Verdict, audit.Window) {
	every := s.checkpointInterval()
	if every < 0 {
		return audit.Checkpoint{}, audit.RecordFull, audit.Window{}
	}
	var next audit.Checkpoint
	var v audit.Verdict
	var w audit.Window
	err := s.d.Store.UpdateAuditCheckpoint(ctx, cluster, release, func(cp audit.Checkpoint, ok bool) (audit.Checkpoint, bool, error) {
		next, v, w = audit.Step(cp, ok, c, every)
		return next, true, nil
	})
	if err != nil {
		s.d.Logger.Warn("audit checkpoint not kept: recording the check in full", "cluster", cluster, "release", release, "error", err)
		return audit.Checkpoint{}, audit.RecordFull, audit.Window{}
	}
	return next, v, w
}

// closeCheckpoint deletes the audit checkpoint of release on cluster, whose release left
// the cluster, and returns its open window of unchanged checks.
func (s *Server) closeCheckpoint(ctx context.Context, cluster, release string) audit.Window {
	var w audit.Window
	err := s.d.Store.UpdateAuditCheckpoint(ctx, cluster, release, func(cp audit.Checkpoint, ok bool) (audit.Checkpoint, bool, error) {
		if ok {
			w = cp.Close()
		}
		return audit.Checkpoint{}, false, nil
	})
	if err != nil {
		s.d.Logger.Warn("audit checkpoint not deleted", "cluster", cluster, "release", release, "error", err)
	}
	return w
}

// applyDetail is the detail of a full "apply" record of status st of report r; url is the
// release's source URL ("" for none).
func applyDetail(r *agentv1.Report, st *agentv1.AssignmentStatus, url string) map[string]any {
	d := map[string]any{
		"revision": st.GetRevision(), "digest": st.GetDigest(), "generation": st.GetGeneration(),
		"phase": st.GetPhase(), "objects": st.GetObjects(),
		"created": st.GetCreated(), "configured": st.GetConfigured(), "pruned": st.GetPruned(),
		"reportSeq": r.GetSeq(), "reportedAt": r.GetProducedAt().AsTime().UTC(),
	}
	if v := st.GetHealth(); v != "" {
		d["health"] = v
	}
	if v := strings.TrimSpace(st.GetError()); v != "" {
		d["error"] = v
	}
	if n := len(st.GetConflicts()); n > 0 {
		d["conflicts"] = st.GetConflicts()
	}
	if st.GetDrifted() {
		d["drifted"] = true
	}
	if url != "" {
		d["url"] = url
	}
	return d
}

// removedDetail is the detail of a "release.removed" record: the revision the release was
// at, what was pruned and kept, why (the tombstone's reason, fleet revision and the user who
// made the change, as the agent reports them), and the window of unchanged checks it closes.
func removedDetail(r *agentv1.Report, st *agentv1.AssignmentStatus, w audit.Window) map[string]any {
	d := map[string]any{
		"revision": st.GetRevision(), "digest": st.GetDigest(), "generation": st.GetGeneration(),
		"pruned": st.GetPruned(), "reportSeq": r.GetSeq(), "reportedAt": r.GetProducedAt().AsTime().UTC(),
	}
	if v := strings.TrimSpace(st.GetError()); v != "" {
		d["error"] = v
	}
	if w.Count > 0 {
		d["verified"] = w.Detail()
	}
	rm := st.GetRemoval()
	for k, v := range map[string]string{"reason": rm.GetReason(), "fleetRevision": rm.GetFleetRevision(), "removedBy": rm.GetActor()} {
		if v != "" {
			d[k] = v
		}
	}
	for k, v := range map[string][]string{"prunedObjects": rm.GetPrunedObjects(), "keptObjects": rm.GetKeptObjects()} {
		if len(v) > 0 {
			d[k] = v
		}
	}
	return d
}

// healedDrift lists the objects whose drift the agent corrected.
func healedDrift(st *agentv1.AssignmentStatus) []map[string]any {
	var healed []map[string]any
	for _, o := range st.GetDrift() {
		if o.GetHealed() {
			healed = append(healed, map[string]any{"object": o.GetObject(), "namespace": o.GetNamespace(), "paths": o.GetPaths()})
		}
	}
	return healed
}
