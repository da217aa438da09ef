package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/procstat"
	"github.com/flotilla/flotilla/internal/testbin"
)

var agentIdle = flag.Duration("agent-idle", 30*time.Second, "how long BenchmarkAgentBinary lets an agent idle before reading its resident memory")

// BenchmarkAgentBinary runs the agent of each binary on a real cluster with 20 releases (one
// ConfigMap each, in a namespace of its own): flotilla-agent, and `flotilla agent` (the CLI's
// binary, which agents ran before flotilla-agent) as the baseline, one after the other. For
// each it reports the time from the process's start (it joins with a fresh token) to every
// release Ready on its cluster, and its resident memory once idle (-agent-idle after that),
// and the ratios of flotilla-agent to the baseline.
//
//	go test -run '^$' -bench AgentBinary -benchtime 1x ./bench
func BenchmarkAgentBinary(b *testing.B) {
	const releases = 20
	agentBin := buildCmd(b, "flotilla-agent")
	cliBin := buildFlotilla(b)
	for b.Loop() {
		dir := b.TempDir()
		repo := newFleetRepo(b, filepath.Join(dir, "fleet"))
		files := map[string]string{"fleet/fleet.yaml": fmt.Sprintf("apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: apps}\nspec:\n  git: {url: file://%s, branch: main}\n  interval: 2s\n", repo.dir)}
		for i := range releases {
			name := fmt.Sprintf("r%02d", i)
			files["fleet/fleet.yaml"] += fmt.Sprintf("---\napiVersion: flotilla.dev/v1alpha1\nkind: Release\nmetadata: {name: %s}\nspec: {source: apps, path: apps/%s, namespace: %s, createNamespace: true, targets: [{selector: {}}]}\n", name, name, name)
			files["apps/"+name+"/config.yaml"] = configYAML(name)
		}
		repo.commit(b, files)
		h := newHubProc(b, "file://"+repo.dir)
		client := h.client()

		type result struct {
			ready time.Duration
			rss   int64
		}
		run := func(name string, argv ...string) result {
			c, err := localcluster.Start(b.Context(), localcluster.Options{Name: name})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := c.Stop(); err != nil {
					b.Error(err)
				}
			}()
			j, err := client.AddCluster(b.Context(), name, map[string]string{"env": "bench"})
			if err != nil {
				b.Fatal(err)
			}
			ctx, stop := context.WithCancel(b.Context())
			cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "--hub", "https://"+h.agentAddr, "--join-token", j.JoinToken,
				"--kubeconfig", c.KubeconfigPath(), "--state-dir", filepath.Join(dir, name), "--log-level", "warn")...)
			cmd.Stderr = os.Stderr
			start := time.Now()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { stop(); _ = cmd.Wait() }() // stopped: its exit status is not what is measured
			eventually.Within(b, 3*time.Minute, func() error {
				st, err := client.Status(b.Context())
				n := 0
				last := fmt.Sprint(err)
				for _, a := range st.Assignments {
					if a.Cluster == name {
						last += fmt.Sprintf("; %s %s %s", a.Release, a.Phase, a.Error)
						if a.Phase == "Ready" {
							n++
						}
					}
				}
				if n != releases {
					return fmt.Errorf("%s: %d of %d releases Ready: %s", name, n, releases, last)
				}
				return nil
			})
			ready := time.Since(start)
			// Real time: idle for -agent-idle, what an agent holds between reconciles is measured.
			time.Sleep(*agentIdle)
			rss, err := procstat.Bytes(cmd.Process.Pid, procstat.Resident)
			if err != nil {
				b.Fatal(err)
			}
			return result{ready: ready, rss: rss}
		}
		agent := run("edge-agent", agentBin)
		cli := run("edge-cli", cliBin, "agent")
		b.ReportMetric(agent.ready.Seconds(), "flotilla-agent-ready-s")
		b.ReportMetric(cli.ready.Seconds(), "flotilla-agent-cmd-ready-s")
		b.ReportMetric(float64(agent.rss)/(1<<20), "flotilla-agent-idle-MiB")
		b.ReportMetric(float64(cli.rss)/(1<<20), "flotilla-agent-cmd-idle-MiB")
		b.ReportMetric(agent.ready.Seconds()/cli.ready.Seconds(), "ready-ratio")
		b.ReportMetric(float64(agent.rss)/float64(cli.rss), "idle-rss-ratio")
	}
}

// buildCmd is the binary NAME make built for the benchmarks (flotilla-bench for the simulator,
// which runs its hub and agent hosts from it): `make bench` hands the binaries `make build`
// makes, with the Makefile's build tags, so the binary measured is the one users run (without
// the tags, the agent idled 20 MiB higher). In the unit run, FLOTILLA_BIN holds race builds.
func buildCmd(tb testing.TB, name string) string {
	tb.Helper()
	return testbin.Path(tb, name)
}
