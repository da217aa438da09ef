// Package agent is the in-cluster side of Flotilla. Its subpackages render an assignment's
// manifests and reconcile them into the cluster.
package agent
