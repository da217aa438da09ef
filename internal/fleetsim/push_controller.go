package fleetsim

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/render"
)

// PushSpec tells a push controller what to push where.
type PushSpec struct {
	// Endpoint is the simulated clusters' HTTPS base URL; CAFile its CA.
	Endpoint string `json:"endpoint"`
	CAFile   string `json:"caFile"`
	// FleetDir is the fleet configuration; RepoDir the source's Git repository.
	FleetDir string `json:"fleetDir"`
	RepoDir  string `json:"repoDir"`
	// WorkDir holds the checkouts.
	WorkDir  string        `json:"workDir"`
	Clusters []PushCluster `json:"clusters"`
	Workers  int           `json:"workers"`
}

// PushCluster is one cluster the controller pushes to.
type PushCluster struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// PushResult is one sync's outcome, one JSON line on the controller's stdout.
type PushResult struct {
	Sent      int64  `json:"sent"`
	Unchanged int64  `json:"unchanged"`
	Error     string `json:"error,omitempty"`
}

// RunPushController is the push-mode baseline's hub side, run as its own process (`flotilla-bench
// push-controller`) so that its CPU and memory are measured like the hub's. For each
// line "sync COMMIT" on in it checks the commit out of the source repository, schedules the
// fleet configuration with the hub's scheduler, renders every assignment per cluster and
// sends every object that differs from what it last sent to that cluster (it remembers
// hashes, as a controller's cache of live state would) over that cluster's own HTTPS
// connection; then it writes a PushResult line to out.
func RunPushController(ctx context.Context, spec PushSpec, in io.Reader, out io.Writer) error {
	if spec.Workers <= 0 {
		spec.Workers = 16
	}
	pem, err := os.ReadFile(spec.CAFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("push controller: %s: no certificate", spec.CAFile)
	}
	p := &pusher{spec: spec, clients: map[string]*http.Client{}, sent: map[string]map[string]map[uint64]uint64{}}
	for _, c := range spec.Clusters {
		// One connection per cluster, as a hub-and-spoke controller holds a client per cluster.
		p.clients[c.Name] = &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}}}
		p.sent[c.Name] = map[string]map[uint64]uint64{}
	}
	sc := bufio.NewScanner(in)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		commit, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "sync ")
		if !ok {
			continue
		}
		res := p.sync(ctx, commit)
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return sc.Err()
}

type pusher struct {
	spec    PushSpec
	clients map[string]*http.Client
	mu      sync.Mutex
	sent    map[string]map[string]map[uint64]uint64 // cluster -> assignment -> identity -> content
}

func (p *pusher) sync(ctx context.Context, commit string) PushResult {
	var res PushResult
	dir, err := checkout(ctx, p.spec.RepoDir, commit, p.spec.WorkDir)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer os.RemoveAll(dir)
	fleet, err := v1alpha1.LoadDir(p.spec.FleetDir)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	clusters := make([]schedule.Cluster, len(p.spec.Clusters))
	for i, c := range p.spec.Clusters {
		clusters[i] = schedule.Cluster{Name: c.Name, Labels: c.Labels}
	}
	arts := map[string]schedule.Artifact{}
	for _, s := range fleet.Sources {
		arts[s.Metadata.Name] = schedule.Artifact{Source: s.Metadata.Name, Revision: commit, Digest: "sha256:" + strings.Repeat("0", 64)}
	}
	plan := schedule.Schedule(fleet, clusters, arts, nil, commit)
	var sent, unchanged atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.spec.Workers)
	for _, c := range p.spec.Clusters {
		g.Go(func() error {
			for _, a := range plan.Assignments[c.Name] {
				if err := p.pushAssignment(gctx, c.Name, dir, a, &sent, &unchanged); err != nil {
					return fmt.Errorf("cluster %s, release %s: %w", c.Name, a.Release, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		res.Error = err.Error()
	}
	res.Sent, res.Unchanged = sent.Load(), unchanged.Load()
	return res
}

func (p *pusher) pushAssignment(ctx context.Context, cluster, root string, a desired.Assignment, sent, unchanged *atomic.Int64) error {
	// A chart renders with its Helm settings as the agent's would (the simulator's sources
	// are all the one checkout), with Helm's default capabilities.
	helm, err := render.HelmOptions(ctx, a, root, func(context.Context, string) (string, error) { return root, nil })
	if err != nil {
		return err
	}
	objs, err := render.Render(ctx, render.Options{Root: root, Path: a.Path, Vars: a.Vars, Helm: helm})
	if err != nil {
		return err
	}
	p.mu.Lock()
	last := p.sent[cluster][a.Release]
	if last == nil {
		last = map[uint64]uint64{}
		p.sent[cluster][a.Release] = last
	}
	p.mu.Unlock()
	url := fmt.Sprintf("%s/clusters/%s/assignments/%s/objects", p.spec.Endpoint, cluster, a.Release)
	for _, o := range objs {
		if o.GetNamespace() == "" {
			o.SetNamespace(a.Namespace)
		}
		body, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		ref, id, content, err := hashObject(o, "")
		if err != nil {
			return err
		}
		if last[id] == content {
			unchanged.Add(1)
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := p.clients[cluster].Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", ref, resp.Status)
		}
		last[id] = content
		sent.Add(1)
	}
	return nil
}

// checkout extracts commit of the repository into a new directory under work, as a
// controller's clone would hold it.
func checkout(ctx context.Context, repo, commit, work string) (string, error) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(work, "checkout-")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", commit)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	tr := tar.NewReader(stdout)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			_ = cmd.Wait() // already failing: the first error is the one returned
			return "", fmt.Errorf("checkout %s: %w", commit, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				var data []byte
				if data, err = io.ReadAll(tr); err == nil {
					err = os.WriteFile(p, data, 0o644)
				}
			}
		}
		if err != nil {
			_ = cmd.Wait() // already failing: the first error is the one returned
			return "", fmt.Errorf("checkout %s: %w", commit, err)
		}
	}
	if err := cmd.Wait(); err != nil {
		return "", fmt.Errorf("checkout %s: git archive: %w: %s", commit, err, stderr.String())
	}
	return dir, nil
}
