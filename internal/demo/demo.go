// Package demo runs a whole fleet on one machine: a hub with SQLite in a data dir, local
// clusters (real kube-apiserver and etcd), an agent per cluster, and an example fleet Git
// repository the user edits to watch changes converge.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/localcluster"
)

// Options configure a demo.
type Options struct {
	// DataDir receives everything: hub data, agent state, clusters, the fleet repository and
	// demo.env. Required.
	DataDir string
	// Clusters is how many local clusters to start. Default 3.
	Clusters int
	// BinDir holds kube-apiserver and etcd (see localcluster).
	BinDir string
	// Out receives progress and the final instructions.
	Out    io.Writer
	Logger *slog.Logger
	// Version is the agents' reported version.
	Version string
}

// clusterLabels gives cluster i (0-based) its labels: the first three as in the README,
// then production clusters alternating regions.
func clusterLabels(i int) map[string]string {
	switch i {
	case 0:
		return map[string]string{"env": "prod", "region": "eu"}
	case 1:
		return map[string]string{"env": "prod", "region": "us"}
	case 2:
		return map[string]string{"env": "staging", "region": "eu"}
	}
	return map[string]string{"env": "prod", "region": []string{"eu", "us"}[i%2]}
}

// Fleet is a running demo.
type Fleet struct {
	Hub      *hub.Hub
	Clusters []*localcluster.Cluster
	RepoDir  string
	EnvFile  string

	stop func()
	wg   sync.WaitGroup
	errs chan error
}

// Start brings the demo fleet up and returns once every assignment is Ready at the first
// revision. Stop (or cancelling ctx) takes it down.
func Start(ctx context.Context, opts Options) (_ *Fleet, err error) {
	if opts.DataDir == "" {
		return nil, errors.New("a data dir is required")
	}
	if opts.Clusters <= 0 {
		opts.Clusters = 3
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &Fleet{RepoDir: filepath.Join(dataDir, "fleet-repo"), EnvFile: filepath.Join(dataDir, "demo.env"), errs: make(chan error, 2*opts.Clusters+2)}
	var st store.Store
	f.stop = func() {
		cancel()
		f.wg.Wait()
		if st != nil {
			_ = st.Close() // stopping the demo: every write was committed
		}
		_ = localcluster.StopAll(f.Clusters) // what is left of a cluster dies with this process (Pdeathsig)
	}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	progress := func(format string, args ...any) { fmt.Fprintf(opts.Out, format+"\n", args...) }

	if _, err := os.Stat(filepath.Join(f.RepoDir, ".git")); errors.Is(err, os.ErrNotExist) {
		progress("Creating the example fleet repository in %s ...", f.RepoDir)
		if err := createFleetRepo(f.RepoDir); err != nil {
			return nil, err
		}
	}

	progress("Starting %d local clusters (kube-apiserver + etcd each) ...", opts.Clusters)
	copts := make([]localcluster.Options, opts.Clusters)
	for i := range copts {
		name := fmt.Sprintf("cluster-%d", i+1)
		copts[i] = localcluster.Options{Name: name, BinDir: opts.BinDir, Dir: filepath.Join(dataDir, "clusters", name)}
	}
	if f.Clusters, err = localcluster.StartAll(ctx, copts); err != nil {
		return nil, err
	}

	progress("Starting the hub (SQLite in %s) ...", filepath.Join(dataDir, "hub"))
	hubDir := filepath.Join(dataDir, "hub")
	if err := os.MkdirAll(hubDir, 0o700); err != nil {
		return nil, err
	}
	if st, err = store.OpenSQLite(ctx, filepath.Join(hubDir, "hub.db")); err != nil {
		return nil, err
	}
	f.Hub, err = hub.New(ctx, hub.Options{
		DataDir: hubDir, Fleet: "file://" + f.RepoDir, FleetBranch: "main", FleetPath: "fleet",
		AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", FleetInterval: 2 * time.Second,
		AllowFileSources: []string{f.RepoDir}, // the example fleet's sources are this repository
		Logger:           opts.Logger.With("component", "hub"),
	}, st)
	if err != nil {
		return nil, err
	}
	f.goRun("hub", func() error { return f.Hub.Run(runCtx) })

	client, err := hubclient.NewClient(hubclient.Config{Hub: f.Hub.APIURL(), Token: f.Hub.AdminToken(), CAFile: f.Hub.CAPath()})
	if err != nil {
		return nil, err
	}
	for i, c := range f.Clusters {
		stateDir := filepath.Join(dataDir, "agents", c.Name())
		token := ""
		if _, err := os.Stat(filepath.Join(stateDir, "agent.db")); errors.Is(err, os.ErrNotExist) {
			j, err := client.AddCluster(ctx, c.Name(), clusterLabels(i))
			var se *hubclient.StatusError
			if errors.As(err, &se) && se.Code == 409 {
				j, err = client.NewJoinToken(ctx, c.Name())
			}
			if err != nil {
				return nil, err
			}
			token = j.JoinToken
		}
		progress("Starting the agent of %s (labels %s) ...", c.Name(), labelsString(clusterLabels(i)))
		a, err := agent.New(ctx, agent.Options{
			HubURL: f.Hub.AgentURL(), JoinToken: token, RESTConfig: c.RESTConfig(), StateDir: stateDir,
			Version: opts.Version, Logger: opts.Logger.With("component", "agent"), // the agent adds its cluster
			HeartbeatInterval: 10 * time.Second, ReportInterval: time.Second,
		})
		if err != nil {
			return nil, err
		}
		f.goRun("agent "+c.Name(), func() error { defer func() { _ = a.Close() }(); return a.Run(runCtx) }) // Run's error is the one to report
	}

	progress("Waiting for the fleet to converge ...")
	if err := waitConverged(ctx, client, f.errs); err != nil {
		return nil, err
	}
	if err := f.writeEnv(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *Fleet) goRun(what string, run func() error) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		if err := run(); err != nil {
			f.errs <- fmt.Errorf("%s: %w", what, err)
		}
	}()
}

// DashboardURL is the hub's dashboard with the admin token in the URL fragment: the page
// moves it to the tab's sessionStorage and out of the address bar, and a fragment is never
// sent to a server, so the token does not end up in any log.
func (f *Fleet) DashboardURL() string {
	return f.Hub.APIURL() + "/#token=" + url.QueryEscape(f.Hub.AdminToken())
}

// Errors reports a component that stopped with an error.
func (f *Fleet) Errors() <-chan error { return f.errs }

// Stop stops the agents, the hub and the clusters (their data stays in the data dir).
func (f *Fleet) Stop() { f.stop() }

// waitConverged waits until every assignment is Ready at its desired revision.
func waitConverged(ctx context.Context, c *hubclient.Client, errs <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		st, err := c.Status(ctx)
		if err == nil && len(st.Assignments) > 0 && allReady(st) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fleet did not converge: %w (last status error: %v)", ctx.Err(), err)
		case err := <-errs:
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func allReady(st hubclient.StatusView) bool {
	for _, a := range st.Assignments {
		if a.Phase != hubclient.PhaseReady || a.AppliedRevision != a.DesiredRevision {
			return false
		}
	}
	return true
}

// writeEnv writes demo.env: shell assignments for the CLI and for scripts.
func (f *Fleet) writeEnv() error {
	vars := [][2]string{
		{"FLOTILLA_HUB", f.Hub.APIURL()}, {"FLOTILLA_TOKEN", f.Hub.AdminToken()}, {"FLOTILLA_CA", f.Hub.CAPath()},
		{"FLEET_REPO", f.RepoDir}, {"FLOTILLA_DASHBOARD", f.DashboardURL()},
	}
	for _, c := range f.Clusters {
		vars = append(vars, [2]string{"KUBECONFIG_" + envName(c.Name()), c.KubeconfigPath()})
	}
	return os.WriteFile(f.EnvFile, []byte(envFile(vars)), 0o600)
}

// envFile is one NAME=value line per variable, then one export line naming every one, so
// that `source demo.env` exports them all and a script can still read the file line by line.
func envFile(vars [][2]string) string {
	var b strings.Builder
	names := make([]string, len(vars))
	for i, v := range vars {
		fmt.Fprintf(&b, "%s=%s\n", v[0], shellQuote(v[1]))
		names[i] = v[0]
	}
	fmt.Fprintf(&b, "export %s\n", strings.Join(names, " "))
	return b.String()
}

// shellQuote quotes v for a shell when it holds anything but safe characters.
func shellQuote(v string) string {
	if v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@%+=,#") == "" {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// TryCommit is the try-step that changes the fleet repository: it flips the EU data
// residency setting between eu-only and eu-strict and commits, so it makes a new revision
// however often it is run.
const TryCommit = `cd "$FLEET_REPO" && sed -i -e 's/eu-only/eu-strict/;t' -e 's/eu-strict/eu-only/' apps/baseline/eu/settings.yaml && git commit -qam "Toggle EU data residency" && cd -`

// envName turns a cluster name into a shell variable suffix: cluster-1 -> CLUSTER_1.
func envName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, name)
}

func labelsString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, " ")
}
