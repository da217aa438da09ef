package fleetsim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

type pushRun struct {
	waves    []Wave
	clusters []*MemCluster
}

// runPush runs the push baseline: fresh simulated clusters behind HTTPS endpoints in this
// process, the push controller as its own process, one sync per commit, each measured as a
// wave.
func runPush(ctx context.Context, opts Options, src *fleetSource, commits []string) (*pushRun, error) {
	dir := filepath.Join(opts.Dir, "push")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	run := &pushRun{}
	spec := PushSpec{FleetDir: src.fleetDir, RepoDir: src.repoDir, WorkDir: filepath.Join(dir, "work"), Workers: opts.PushWorkers}
	for i := range opts.Clusters {
		run.clusters = append(run.clusters, NewMemCluster(clusterName(i)))
		spec.Clusters = append(spec.Clusters, PushCluster{Name: clusterName(i), Labels: simLabels})
	}
	ep, err := startPushEndpoints(dir, run.clusters)
	if err != nil {
		return nil, err
	}
	defer ep.close()
	spec.Endpoint, spec.CAFile = ep.url, ep.caFile
	specFile := filepath.Join(dir, "spec.json")
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(specFile, data, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, opts.Binary, "push-controller", "--spec", specFile)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start push controller: %w", err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }() // stopping it: the report is already read
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 16<<20)
	probe := waveProbe{pid: cmd.Process.Pid, meter: &ep.meter, clusters: run.clusters}
	for i, commit := range commits {
		name := fmt.Sprintf("wave %d", i+1)
		w, err := probe.measure(ctx, name, commit, opts.Timeout, func() error {
			_, err := io.WriteString(stdin, "sync "+commit+"\n")
			return err
		}, func(ctx context.Context) error {
			if !lines.Scan() {
				return fmt.Errorf("push controller exited: %v", lines.Err())
			}
			var res PushResult
			if err := json.Unmarshal(lines.Bytes(), &res); err != nil {
				return err
			}
			if res.Error != "" {
				return errors.New(res.Error)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("push %s: %w", name, err)
		}
		run.waves = append(run.waves, w)
		opts.Logger.Info("push "+name+" done", "seconds", w.ConvergedSeconds)
	}
	return run, nil
}
