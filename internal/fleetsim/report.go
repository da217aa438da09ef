package fleetsim

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// SpokesNote is printed with every report: what is simulated and what is real.
const SpokesNote = "Spokes are SIMULATED: every cluster is an in-memory store that keeps object hashes; " +
	"the agents (join, watch, fetch, verify, unpack, render, diff, report), the hub process, " +
	"its SQLite store, Git, and mTLS over loopback are real. Traffic is counted at the spokes' end of each connection."

// Report is the outcome of a simulator run.
type Report struct {
	Shape  Shape  `json:"shape"`
	Spokes string `json:"spokes"`
	// Pull is the hub and real agents: wave 1 (the fleet's first sync) and wave 2 (a new
	// commit changing every object of every release).
	Pull []Wave `json:"pull"`
	// Push is the baseline: a push controller process rendering per cluster and sending
	// every object to every simulated cluster's endpoint, for the same two commits.
	Push []Wave `json:"push,omitempty"`
	// PullOverPush compares each wave, pull divided by push (less than 1: pull is cheaper).
	PullOverPush []Ratios `json:"pullOverPush,omitempty"`
	// Agreement says whether every cluster ended with the same objects in both modes.
	Agreement *Agreement `json:"agreement,omitempty"`
	// Webhook compares sync on push with polling (Options.Webhook).
	Webhook *WebhookReport `json:"webhook,omitempty"`
	// Helm says what the Helm mode's chart repository served (Options.Helm).
	Helm *HelmReport `json:"helm,omitempty"`
	// Downloads is each cluster's artifacts, downloaded and desired (Options.RecordDownloads).
	Downloads *DownloadsReport `json:"downloads,omitempty"`
}

// Shape is the simulated fleet.
type Shape struct {
	Clusters              int     `json:"clusters"`
	Releases              int     `json:"releases"`
	ObjectsPerRelease     int     `json:"objectsPerRelease"`
	ObjectSize            int     `json:"objectSizeBytes"`
	Payload               string  `json:"payload"`
	Layout                string  `json:"layout,omitempty"`
	ReportIntervalSeconds float64 `json:"reportIntervalSeconds"`
	Assignments           int     `json:"assignments"`
	Objects               int64   `json:"objects"`
}

// Wave is one measured convergence.
type Wave struct {
	Name   string `json:"name"`
	Commit string `json:"commit"`
	// ConvergedSeconds: from the start (agents started, or the commit) until every
	// assignment showed the commit applied (pull: at the hub's status API; push: when the
	// controller had every object acknowledged).
	ConvergedSeconds float64 `json:"convergedSeconds"`
	// HubCPUSeconds is the hub process's user+system CPU (its git children included) during
	// the wave; HubPeakRSSBytes its peak resident memory during the wave (VmHWM, reset at the
	// start).
	HubCPUSeconds   float64 `json:"hubCPUSeconds"`
	HubPeakRSSBytes int64   `json:"hubPeakRSSBytes"`
	// SpokesCPUSeconds is the simulator process's CPU during the wave: the simulated spokes
	// (pull: every agent's fetch, unpack, render and diff; push: the endpoints). On a real
	// fleet each cluster spends its share on its own cores; here all share this machine's,
	// and when it is close to the machine's cores x ConvergedSeconds the spokes, not the hub,
	// bound the convergence time.
	SpokesCPUSeconds float64 `json:"spokesCPUSeconds"`
	// BytesHubToSpokes and BytesSpokesToHub cross the connections, TLS included.
	BytesHubToSpokes  int64   `json:"bytesHubToSpokes"`
	BytesSpokesToHub  int64   `json:"bytesSpokesToHub"`
	Requests          int64   `json:"requests"`
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	// ObjectsWritten and ObjectsUnchanged are counted at the simulated clusters.
	ObjectsWritten   int64 `json:"objectsWritten"`
	ObjectsUnchanged int64 `json:"objectsUnchanged"`
	// LoadAverage is the machine's one-minute load average when the wave ended: on a shared
	// machine, how much else competed for the cores.
	LoadAverage float64 `json:"loadAverage"`
}

// Ratios are pull divided by push for one wave.
type Ratios struct {
	Wave             string  `json:"wave"`
	BytesHubToSpokes float64 `json:"bytesHubToSpokes"`
	BytesSpokesToHub float64 `json:"bytesSpokesToHub"`
	HubCPUSeconds    float64 `json:"hubCPUSeconds"`
	HubPeakRSS       float64 `json:"hubPeakRSS"`
	ConvergedSeconds float64 `json:"convergedSeconds"`
}

// Agreement compares the clusters' final contents in both modes.
type Agreement struct {
	Clusters int  `json:"clusters"`
	Matching int  `json:"matching"`
	Agree    bool `json:"agree"`
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (r *Report) computeRatios() {
	r.PullOverPush = nil
	for i := range min(len(r.Pull), len(r.Push)) {
		p, q := r.Pull[i], r.Push[i]
		r.PullOverPush = append(r.PullOverPush, Ratios{
			Wave:             p.Name,
			BytesHubToSpokes: ratio(float64(p.BytesHubToSpokes), float64(q.BytesHubToSpokes)),
			BytesSpokesToHub: ratio(float64(p.BytesSpokesToHub), float64(q.BytesSpokesToHub)),
			HubCPUSeconds:    ratio(p.HubCPUSeconds, q.HubCPUSeconds),
			HubPeakRSS:       ratio(float64(p.HubPeakRSSBytes), float64(q.HubPeakRSSBytes)),
			ConvergedSeconds: ratio(p.ConvergedSeconds, q.ConvergedSeconds),
		})
	}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for people: one column per wave and mode.
func (r *Report) WriteTable(w io.Writer) error {
	s := r.Shape
	fmt.Fprintf(w, "Fleet simulator: %d clusters x %d releases x %d objects of ~%d bytes (%s payload) = %d assignments, %d objects\n",
		s.Clusters, s.Releases, s.ObjectsPerRelease, s.ObjectSize, s.Payload, s.Assignments, s.Objects)
	if s.Layout == LayoutPerCluster {
		fmt.Fprintf(w, "Per-cluster layout: each release renders clusters/<cluster>/<release>, a kustomization reaching base/<release>\n")
	}
	fmt.Fprintf(w, "%s\n\n", r.Spokes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	type col struct {
		title string
		w     Wave
	}
	var cols []col
	for _, x := range r.Pull {
		cols = append(cols, col{"pull " + x.Name, x})
	}
	for _, x := range r.Push {
		cols = append(cols, col{"push " + x.Name, x})
	}
	row := func(name string, f func(Wave) string) {
		cells := []string{name}
		for _, c := range cols {
			cells = append(cells, f(c.w))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	head := []string{""}
	for _, c := range cols {
		head = append(head, c.title)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	row("converged (s)", func(x Wave) string { return fmt.Sprintf("%.1f", x.ConvergedSeconds) })
	row("hub CPU (s)", func(x Wave) string { return fmt.Sprintf("%.1f", x.HubCPUSeconds) })
	row("simulated spokes CPU (s)", func(x Wave) string { return fmt.Sprintf("%.1f", x.SpokesCPUSeconds) })
	row("hub peak RSS (MiB)", func(x Wave) string { return fmt.Sprintf("%.0f", float64(x.HubPeakRSSBytes)/(1<<20)) })
	row("bytes hub->spokes", func(x Wave) string { return humanBytes(x.BytesHubToSpokes) })
	row("bytes spokes->hub", func(x Wave) string { return humanBytes(x.BytesSpokesToHub) })
	row("requests at hub", func(x Wave) string { return fmt.Sprint(x.Requests) })
	row("requests/s at hub", func(x Wave) string { return fmt.Sprintf("%.0f", x.RequestsPerSecond) })
	row("objects written", func(x Wave) string { return fmt.Sprint(x.ObjectsWritten) })
	row("objects unchanged", func(x Wave) string { return fmt.Sprint(x.ObjectsUnchanged) })
	row("machine load (1 min)", func(x Wave) string { return fmt.Sprintf("%.1f", x.LoadAverage) })
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.PullOverPush) > 0 {
		fmt.Fprintln(w, "\npull / push (below 1: pull costs less)")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "\twave\thub->spokes bytes\tspokes->hub bytes\thub CPU\thub peak RSS\tconverged\t")
		for _, x := range r.PullOverPush {
			fmt.Fprintf(tw, "\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", x.Wave, x.BytesHubToSpokes, x.BytesSpokesToHub, x.HubCPUSeconds, x.HubPeakRSS, x.ConvergedSeconds)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if a := r.Agreement; a != nil {
		fmt.Fprintf(w, "\nfinal objects, pull vs push: %d of %d clusters identical\n", a.Matching, a.Clusters)
	}
	if h := r.Webhook; h != nil {
		h.writeTable(w)
	}
	if h := r.Helm; h != nil {
		h.writeTable(w)
	}
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
