package hub

import (
	"github.com/flotilla/flotilla/internal/hub/agekeys"
	"github.com/flotilla/flotilla/internal/hub/agentapi"
)

// newAgentAPI wires the agent endpoint: the store, the CA, the artifacts (fetched from the
// other replicas when missing here), the audit log, and the watchers, last-seen times and
// certificate cache the user API and the replicas share with it.
func (h *Hub) newAgentAPI() *agentapi.Server {
	o := h.opts
	return agentapi.New(agentapi.Deps{
		Store: h.store, CA: h.ca, Artifacts: h.artifacts, EnsureArtifact: h.repl.EnsureArtifact,
		Record: h.record, Changed: h.dashboardChanged,
		Watchers: h.watchers, Seen: h.seen, Auth: h.auth, Metrics: h.metrics.agent,
		Clock: h.clock, Logger: h.log,
		AgeKeys: agekeys.NewTracker(h.store, h.record, h.log),
	}, agentapi.Options{
		CertTTL: o.CertTTL, AgentQPS: o.AgentQPS, AgentBurst: o.AgentBurst, GlobalQPS: o.GlobalQPS, GlobalBurst: o.GlobalBurst,
		JoinQPS: o.JoinQPS, JoinBurst: o.JoinBurst,
		MaxArtifactDownloads: o.MaxArtifactDownloads, MaxInflightReports: o.MaxInflightReports,
		AuditCheckpoint: o.AuditCheckpoint,
	})
}
