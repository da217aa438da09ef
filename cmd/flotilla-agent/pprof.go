//go:build pprof

package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// Built with the tag pprof, the agent serves Go's profiling endpoints (/debug/pprof/heap, ...)
// on FLOTILLA_AGENT_PPROF_ADDR (HOST:PORT), for measuring what it holds when idle:
//
//	make build GOTAGS='kustomize_disable_go_plugin_support pprof'
//
// BenchmarkAgentBinary builds with the Makefile's GOTAGS line: add pprof there for one run,
// set FLOTILLA_AGENT_PPROF_ADDR=127.0.0.1:6061 and a long -agent-idle, and read
// http://127.0.0.1:6061/debug/pprof/heap while it idles.
//
// It is a build tag, not a flag, because net/http/pprof alone grows the shipped binary and
// its resident memory, the figure it is there to measure. The render child (the same binary
// with __render) does not serve it.
func init() {
	addr := os.Getenv("FLOTILLA_AGENT_PPROF_ADDR")
	if addr == "" || (len(os.Args) > 1 && os.Args[1] == "__render") {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pprof address %s: %v\n", addr, err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	go func() { _ = http.Serve(ln, mux) }() // a profiling aid: the agent runs on without it
}
