package hub

import "github.com/flotilla/flotilla/internal/hub/userapi"

// newUserAPI wires the user API: the store, the last-seen times and decoded desired states
// it shares with the agent API, the controller's view, the audit log, and what a cluster's
// addition, relabelling or removal sets off here.
func (h *Hub) newUserAPI() *userapi.API {
	o := h.opts
	return userapi.New(userapi.Deps{
		Store: h.store, Seen: h.seen, Desired: h.desired, View: h.ctrl.View, Audit: h.audit,
		Record: h.record, ClustersChanged: h.kickController, ClusterRelabelled: h.ctrl.Relabelled, ClusterRemoved: h.forgetCluster,
		Clock: h.clock, Logger: h.log,
	}, userapi.Options{
		AdminToken: h.adminToken, AgentURL: h.AgentURL(), CAFingerprint: h.ca.Fingerprint(),
		TokenTTL: o.TokenTTL, UnreachableAfter: o.UnreachableAfter,
	})
}

// forgetCluster drops what this replica keeps in memory of a cluster removed from the store
// (which revoked its certificates): cached certificate checks, open watch streams, its
// last-seen time and heartbeat state.
func (h *Hub) forgetCluster(name string) {
	h.auth.ForgetCluster(name)
	h.watchers.CloseCluster(name)
	h.seen.Forget(name)
	h.agent.ForgetCluster(name)
}

// dashboardChanged tells the dashboard that the fleet's status changed (a report ingested, a
// desired state written). Nothing before the user API exists.
func (h *Hub) dashboardChanged() {
	if h.user != nil {
		h.user.DashboardChanged()
	}
}
