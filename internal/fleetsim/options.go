package fleetsim

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Options shape a simulated fleet. The zero value of each field is its default.
type Options struct {
	// Binary is the flotilla-bench binary that runs the hub (and the push controller). Required.
	Binary string
	// Dir holds everything the run writes: the source repository, the fleet configuration, the
	// hub's data dir and the agents' state dirs. Required.
	Dir string
	// Clusters is the number of simulated clusters, each with its own real agent. Default 20.
	Clusters int
	// Releases is the number of releases, every one assigned to every cluster. Default 3.
	Releases int
	// Objects is the number of ConfigMaps in each release. Default 10.
	Objects int
	// ObjectSize is roughly the bytes of each rendered ConfigMap. Default 512.
	ObjectSize int
	// Payload is what fills the ConfigMaps: "text" (a config file: keys and short values,
	// compressible like real configuration) or "random" (hex digits: barely compressible).
	// Default "text".
	Payload string
	// Layout is how the source lays out the releases: "shared" (releases/<release>, every
	// cluster renders the same path) or "per-cluster" (each release's path is
	// clusters/{{ .Cluster.Name }}/<release>, a kustomization reaching base/<release>, which
	// holds the ConfigMaps). Default "shared".
	Layout string
	// RecordDownloads records, at the agents' end, which artifacts each cluster downloaded,
	// and keeps one copy of each under Dir/downloads (Report.Downloads). For small fleets.
	RecordDownloads bool
	// ReportInterval is the agents' outbox flush interval. Default 5s (the agent's default).
	ReportInterval time.Duration
	// HeartbeatInterval is the agents' heartbeat interval. Default 30s (the agent's default).
	HeartbeatInterval time.Duration
	// SourceInterval is how often the hub polls the source repository. Default 2s.
	SourceInterval time.Duration
	// DriftInterval is each release's drift-check interval. Default 10m.
	DriftInterval time.Duration
	// PollInterval is how often the hub's status API is read to find the all-synced moment.
	// Default 2s.
	PollInterval time.Duration
	// Timeout bounds each wave. Default 30m.
	Timeout time.Duration
	// Push also runs the push-mode baseline after the pull waves. Default false.
	Push bool
	// Webhook measures sync on push after wave 2: WebhookRounds commits with the source
	// polled every SourceInterval, then as many with its interval raised to an hour and a
	// signed push to the hub's generic webhook after each (WebhookReport). It cannot be
	// combined with Push (the push baseline compares the final contents after wave 2).
	Webhook bool
	// Helm makes every release one chart, served by the simulator as a chart repository over
	// TLS and fetched by the hub (Source.spec.helm), rendered by every agent with per-cluster
	// values; wave 2 publishes a new chart version. No push baseline, no webhook mode.
	Helm bool
	// WebhookRounds is the commits measured in each mode with Webhook. Default 5.
	WebhookRounds int
	// PushWorkers is how many clusters the push controller syncs at once. Default 16.
	PushWorkers int
	// HubArgs are extra flags for `flotilla hub` (limits, for instance).
	HubArgs []string
	// HubProfile, when set, is where the hub's CPU profile is written: HubProfileFor from the
	// start of pull wave 1.
	HubProfile    string
	HubProfileFor time.Duration
	// JoinConcurrency is how many agents register and join at once. Default 8.
	JoinConcurrency int
	// Logger receives progress. Default: discarded.
	Logger *slog.Logger
}

// The source layouts (Options.Layout).
const (
	LayoutShared     = "shared"
	LayoutPerCluster = "per-cluster"
)

func (o *Options) setDefaults() error {
	if o.Binary == "" || o.Dir == "" {
		return errors.New("fleet simulator: a flotilla-bench binary and a work directory are required")
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.Clusters, 20)
	def(&o.Releases, 3)
	def(&o.Objects, 10)
	def(&o.ObjectSize, 512)
	def(&o.PushWorkers, 16)
	def(&o.JoinConcurrency, 8)
	def(&o.WebhookRounds, 5)
	defD(&o.ReportInterval, 5*time.Second)
	defD(&o.HeartbeatInterval, 30*time.Second)
	defD(&o.SourceInterval, 2*time.Second)
	defD(&o.DriftInterval, 10*time.Minute)
	defD(&o.PollInterval, 2*time.Second)
	defD(&o.Timeout, 30*time.Minute)
	defD(&o.HubProfileFor, 30*time.Second)
	if o.SourceInterval < 2*time.Second {
		return fmt.Errorf("source interval %s: the hub polls a source at most every 2s", o.SourceInterval)
	}
	if o.Helm && (o.Push || o.Webhook) {
		return errors.New("fleet simulator: the Helm mode has no push baseline or webhook mode: turn them off")
	}
	if o.Webhook && o.Push {
		return errors.New("fleet simulator: the webhook mode compares with polling, not push: turn the push baseline off")
	}
	if o.Layout == "" {
		o.Layout = LayoutShared
	}
	if o.Layout != LayoutShared && o.Layout != LayoutPerCluster {
		return fmt.Errorf("layout %q: want %s or %s", o.Layout, LayoutShared, LayoutPerCluster)
	}
	if o.Helm && o.Layout != LayoutShared {
		return errors.New("fleet simulator: the Helm mode's releases are charts: it has no per-cluster layout")
	}
	if o.Payload == "" {
		o.Payload = "text"
	}
	if o.Payload != "text" && o.Payload != "random" {
		return fmt.Errorf("payload %q: want text or random", o.Payload)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
