package agent

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/render"
)

// helmOptions are how the assignment's path renders if it is a chart: its Helm settings, its
// values and patch files read from their artifacts, and the cluster's capabilities. It is nil
// when the path is not a chart (a directory without Chart.yaml) and the assignment has no
// Helm settings: nothing then reads the cluster's capabilities.
func (a *Agent) helmOptions(ctx context.Context, as *desired.Assignment) (*render.Helm, error) {
	root, err := a.artifactRoot(ctx, as.Digest)
	if err != nil {
		return nil, err
	}
	h, err := render.HelmOptions(ctx, *as, root, a.artifactRoot)
	if h == nil || err != nil {
		return nil, err
	}
	caps, err := a.caps.get(ctx, a.clock, a.opts.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("chart %q: the cluster's capabilities (.Capabilities): %w", as.Path, err)
	}
	h.KubeVersion, h.APIVersions = caps.kubeVersion, caps.apiVersions
	return h, nil
}

// helmFailed is told that a chart failed to render or apply: the cluster's capabilities may
// have changed since they were read (an API removed by an upgrade, a CRD installed), so the
// next render reads them again (at most every capabilitiesMinAge).
func (a *Agent) helmFailed(h *render.Helm) {
	if h != nil {
		a.caps.invalidate()
	}
}

// Capabilities are read from the cluster once and kept for capabilitiesTTL on the agent's
// clock, or until a chart fails and they are older than capabilitiesMinAge.
const (
	capabilitiesTTL    = 10 * time.Minute
	capabilitiesMinAge = 30 * time.Second
	// maxAPIVersions bounds what a cluster's discovery may make the agent keep (and pass to
	// every render): a cluster with 500 CRDs serves a few thousand.
	maxAPIVersions = 20000
	// discoveryTimeout bounds each discovery request.
	discoveryTimeout = 30 * time.Second
)

// capabilities are what a chart sees as .Capabilities.
type capabilities struct {
	kubeVersion string
	apiVersions []string
}

// capabilityCache holds the cluster's capabilities for the agent's renders.
type capabilityCache struct {
	mu    sync.Mutex
	caps  *capabilities
	read  time.Time
	stale bool
}

// get returns the cached capabilities, reading them when they are missing, older than
// capabilitiesTTL or invalidated. Without a REST config (a simulated cluster) they are
// empty: Helm's defaults.
func (c *capabilityCache) get(ctx context.Context, clk clock.Clock, cfg *rest.Config) (capabilities, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := clk.Now()
	age := now.Sub(c.read)
	if c.caps != nil && age < capabilitiesTTL && (!c.stale || age < capabilitiesMinAge) {
		return *c.caps, nil
	}
	if cfg == nil {
		return capabilities{}, nil
	}
	caps, err := readCapabilities(ctx, cfg)
	if err != nil {
		return capabilities{}, err
	}
	c.caps, c.read, c.stale = caps, now, false
	return *caps, nil
}

// invalidate makes the next get read the capabilities again, unless they were read less than
// capabilitiesMinAge ago (a chart that always fails must not cost a discovery per retry).
// The age is checked at that get, on the agent's clock.
func (c *capabilityCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stale = true
}

// readCapabilities reads the server version and every group-version and
// group-version/kind the cluster serves, as `helm install` does. A group whose discovery fails
// (an aggregated API whose service is down) is left out, as Helm leaves it out.
func readCapabilities(ctx context.Context, cfg *rest.Config) (*capabilities, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = discoveryTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("server version: %w", err)
	}
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("API versions: %w", err)
	}
	set := map[string]bool{}
	for _, g := range groups {
		for _, gv := range g.Versions {
			set[gv.GroupVersion] = true
		}
	}
	for _, rl := range resources {
		for _, r := range rl.APIResources {
			set[rl.GroupVersion+"/"+r.Kind] = true
		}
	}
	if len(set) > maxAPIVersions {
		return nil, fmt.Errorf("the cluster serves %d API versions and kinds, over the limit of %d", len(set), maxAPIVersions)
	}
	out := &capabilities{kubeVersion: v.GitVersion, apiVersions: make([]string, 0, len(set))}
	for k := range set {
		out.apiVersions = append(out.apiVersions, k)
	}
	sort.Strings(out.apiVersions)
	return out, nil
}
