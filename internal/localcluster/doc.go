// Package localcluster starts real, local Kubernetes control planes: one etcd and one
// kube-apiserver process per cluster, on free loopback ports, with their data in a directory of
// their own.
//
// It is ordinary code rather than a test helper because two users need it: the tests, which run
// apply, prune, drift and health against real API servers, and `flotilla demo`, which runs a whole
// fleet on one machine. The binaries come from tools/kubeenv (`make kube-binaries` writes them to
// bin/ at the repository root); [Start] looks for them there, in Options.BinDir, or in the
// directory named by the FLOTILLA_BIN_DIR environment variable, and its error names the missing
// binary and the make target that builds it.
//
// A started cluster has:
//   - its own certificate authority and a TLS serving certificate for 127.0.0.1, ::1 and localhost;
//   - an admin bearer token in the system:masters group (RBAC is on, as in a real cluster);
//   - a kubeconfig file for that admin, at [Cluster.KubeconfigPath];
//   - etcd without fsync, because a local cluster's data is thrown away with it.
//
// No controller manager, scheduler or kubelet runs: nothing reconciles Deployments or Pods, so
// tests that need a ready workload write its status themselves.
//
// [Cluster.Stop] sends SIGTERM, waits a grace period, then sends SIGKILL, and removes the data
// directory it created. The processes are also started with a parent-death signal, so they do not
// outlive a test binary that panics or is killed.
package localcluster
