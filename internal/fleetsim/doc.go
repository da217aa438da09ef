// Package fleetsim is the fleet simulator: many real agents in one process against a real
// hub process over mTLS on loopback, reconciling into in-memory clusters instead of API
// servers, and a push-mode baseline that renders per cluster and sends every object to every
// simulated cluster over HTTPS, measured side by side in one run. The spokes are simulated;
// everything between the hub and the spokes is real.
//
// It backs `flotilla-bench fleet` and the benchmarks in bench/.
package fleetsim
