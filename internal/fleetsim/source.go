package fleetsim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// fleetSource is the generated fleet: a fleet configuration directory (one Source, every
// release assigned to every cluster labelled sim=true) and a local Git repository holding
// each release's ConfigMaps.
type fleetSource struct {
	opts     Options
	fleetDir string
	repoDir  string
}

// releaseName and clusterName are the generated names.
func releaseName(i int) string { return fmt.Sprintf("r-%03d", i) }
func clusterName(i int) string { return fmt.Sprintf("sim-%05d", i) }

// simLabels are every simulated cluster's labels; every release selects them.
var simLabels = map[string]string{"sim": "true", "region": "loopback"}

func newFleetSource(ctx context.Context, opts Options) (*fleetSource, error) {
	s := &fleetSource{opts: opts, fleetDir: filepath.Join(opts.Dir, "fleet"), repoDir: filepath.Join(opts.Dir, "source")}
	for _, d := range []string{s.fleetDir, s.repoDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("fleet simulator: %w", err)
		}
	}
	if err := s.git(ctx, "init", "-q", "-b", "main"); err != nil {
		return nil, err
	}
	if err := s.writeFleet(opts.SourceInterval); err != nil {
		return nil, err
	}
	return s, nil
}

// writeFleet writes the fleet configuration with the source polled every interval.
func (s *fleetSource) writeFleet(interval time.Duration) error {
	opts := s.opts
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: "file://%s", branch: main}
  interval: %s
`, s.repoDir, interval)
	for r := range opts.Releases {
		path := "releases/" + releaseName(r)
		if opts.Layout == LayoutPerCluster {
			path = "clusters/{{ .Cluster.Name }}/" + releaseName(r)
		}
		fmt.Fprintf(&b, `---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: %[1]s}
spec:
  source: apps
  path: %[3]q
  targets: [{selector: {matchLabels: {sim: "true"}}}]
  namespace: %[1]s
  createNamespace: true
  prune: true
  interval: %[2]s
`, releaseName(r), opts.DriftInterval, path)
	}
	if err := os.WriteFile(filepath.Join(s.fleetDir, "fleet.yaml"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("fleet simulator: write fleet configuration: %w", err)
	}
	return nil
}

// commit writes every release's ConfigMaps at revision rev (every object changes from one
// revision to the next) and commits them; it returns the commit hash.
func (s *fleetSource) commit(ctx context.Context, rev int) (string, error) {
	for r := range s.opts.Releases {
		dir := filepath.Join(s.repoDir, "releases", releaseName(r))
		if s.opts.Layout == LayoutPerCluster {
			dir = filepath.Join(s.repoDir, "base", releaseName(r))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		var b strings.Builder
		for o := range s.opts.Objects {
			writeConfigMap(&b, s.opts, r, o, rev)
		}
		if err := os.WriteFile(filepath.Join(dir, "configmaps.yaml"), []byte(b.String()), 0o644); err != nil {
			return "", fmt.Errorf("fleet simulator: write release %s: %w", releaseName(r), err)
		}
		if s.opts.Layout == LayoutPerCluster {
			if err := s.writeClusterPaths(r, dir); err != nil {
				return "", err
			}
		}
	}
	// Something changes in every revision, even a fleet without releases.
	if err := os.WriteFile(filepath.Join(s.repoDir, "REVISION"), fmt.Appendf(nil, "%d\n", rev), 0o644); err != nil {
		return "", err
	}
	if err := s.git(ctx, "add", "-A"); err != nil {
		return "", err
	}
	if err := s.git(ctx, "commit", "-q", "-m", fmt.Sprintf("revision %d of every release", rev)); err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, "git", "-C", s.repoDir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("fleet simulator: source repository %s: rev-parse: %w", s.repoDir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// writeClusterPaths writes the per-cluster layout's paths of release r: a kustomization in
// clusters/<cluster>/<release> per cluster, reaching the shared base (baseDir) where the
// ConfigMaps are. A cluster's own directory is what no other cluster may receive.
func (s *fleetSource) writeClusterPaths(r int, baseDir string) error {
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [configmaps.yaml]\n"
	if err := os.WriteFile(filepath.Join(baseDir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		return fmt.Errorf("fleet simulator: write base of release %s: %w", releaseName(r), err)
	}
	for c := range s.opts.Clusters {
		dir := filepath.Join(s.repoDir, "clusters", clusterName(c), releaseName(r))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		kust := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../../base/%s]\n", releaseName(r))
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
			return fmt.Errorf("fleet simulator: write cluster %s's path of release %s: %w", clusterName(c), releaseName(r), err)
		}
	}
	return nil
}

func (s *fleetSource) git(ctx context.Context, args ...string) error {
	full := append([]string{"-C", s.repoDir, "-c", "user.name=fleet simulator", "-c", "user.email=sim@flotilla.invalid"}, args...)
	if out, err := exec.CommandContext(ctx, "git", full...).CombinedOutput(); err != nil {
		return fmt.Errorf("fleet simulator: source repository %s: git %s: %w: %s", s.repoDir, args[0], err, out)
	}
	return nil
}

// writeConfigMap writes one ConfigMap of about opts.ObjectSize bytes. ${cluster_name} makes
// every cluster's rendering its own, as per-cluster values do in real fleets: a push
// controller cannot send one rendering to all.
func writeConfigMap(b *strings.Builder, opts Options, release, object, rev int) {
	start := b.Len()
	fmt.Fprintf(b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  labels: {app.kubernetes.io/part-of: %s}\ndata:\n  cluster: ${cluster_name}\n  revision: \"%d\"\n  settings: |\n",
		object, releaseName(release), rev)
	for line := 0; b.Len()-start < opts.ObjectSize; line++ {
		if opts.Payload == "random" {
			sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d/%d/%d", release, object, line, rev))
			fmt.Fprintf(b, "    key-%03d=%s\n", line, hex.EncodeToString(sum[:12]))
			continue
		}
		// Keys repeat from object to object, values do not: like real configuration, it
		// compresses, but not to nothing.
		v := fnv.New64a()
		fmt.Fprintf(v, "%d/%d/%d/%d", release, object, line, rev)
		x := v.Sum64()
		fmt.Fprintf(b, "    service.%03d.endpoint=svc-%04x.%s:%d\n    service.%03d.timeout=%dms\n",
			line, x&0xffff, releaseName(release), 1024+(x>>16)%50000, line, (x>>40)%10000)
	}
}
