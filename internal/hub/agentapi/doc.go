// Package agentapi is the hub's agent endpoint: Join (a one-time token and a CSR for a
// certificate), and, authorised per request from the client certificate, Renew, Watch (the
// cluster's desired state whenever its generation moves), Report (idempotent by sequence),
// Heartbeat and artifact downloads. It sheds load before it costs memory or store work
// (limits.go), remembers certificate checks (auth.go), and keeps last-seen times in memory
// (lastseen.go).
//
// It takes its dependencies explicitly ([Deps]): the store, the CA, the artifact store, a
// clock, a logger, an audit record function and the [Watchers] that the controller and the
// other replicas wake. It never holds the hub.
package agentapi
