//go:build bench

package bench

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"

	"github.com/flotilla/flotilla/internal/fleetsim"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// TestBenchCold runs `flotilla-bench cold` at a tiny shape, against one hub on SQLite and
// against two replicas on PostgreSQL, and checks what a reader of its report relies on: every
// assignment converged, no agent gave up, the agents' requests were counted, and the
// replicas' shares add up to the fleet (each replica served some of it). Time is not asserted:
// the 10,000-agent figures come from the command itself.
func TestBenchCold(t *testing.T) {
	t.Parallel()
	bin := buildCmd(t, "flotilla-bench")
	const agents = 20
	tests := []struct {
		name     string
		args     []string
		replicas int
	}{
		{name: "one hub", replicas: 1},
		{name: "two replicas on PostgreSQL", replicas: 2, args: []string{"--replicas", "2", "--postgres", pgtest.ServerDSN()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"cold", "--agents", strconv.Itoa(agents), "--poll-interval", "200ms",
				"--timeout", "3m", "--dir", t.TempDir(), "-o", "json"}, tt.args...)
			var out, errOut bytes.Buffer
			cmd := exec.CommandContext(t.Context(), bin, args...)
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("flotilla-bench %v: %v\n%s", args, err, errOut.String())
			}
			var rep fleetsim.ColdReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("report: %v\n%s", err, out.String())
			}
			if !rep.Converged || rep.Synced != agents {
				t.Errorf("converged %v with %d of %d assignments Ready; want all", rep.Converged, rep.Synced, agents)
			}
			if rep.AgentsNotSynced != 0 || rep.AgentsExited != 0 {
				t.Errorf("agents gave up: %d not Ready, %d exited (%s)", rep.AgentsNotSynced, rep.AgentsExited, rep.GaveUpExample)
			}
			if rep.Requests < agents || rep.BytesHubToSpokes <= 0 || rep.HubPeakRSSBytes <= 0 {
				t.Errorf("not counted: %d requests, %d bytes to the agents, hub peak %d bytes", rep.Requests, rep.BytesHubToSpokes, rep.HubPeakRSSBytes)
			}
			if len(rep.PerReplica) != tt.replicas {
				t.Fatalf("%d replica shares, want %d: %+v", len(rep.PerReplica), tt.replicas, rep.PerReplica)
			}
			var primary, connected int
			var downloads, requests int64
			for _, s := range rep.PerReplica {
				primary += s.AgentsPrimary
				connected += s.AgentsConnected
				downloads += s.Downloads
				requests += s.Requests
				if s.AgentsConnected == 0 || s.Downloads == 0 {
					t.Errorf("%s served nothing: %+v", s.Replica, s)
				}
			}
			if primary != agents || connected != agents {
				t.Errorf("replica shares: %d agents chose a replica first and %d were connected at the end; want %d each", primary, connected, agents)
			}
			// One release each: every agent downloaded its artifact once, from one replica.
			if downloads != agents {
				t.Errorf("replica shares: %d artifact downloads, want %d (one per agent)", downloads, agents)
			}
			if requests != rep.Requests {
				t.Errorf("replica shares: %d requests, the whole run counted %d", requests, rep.Requests)
			}
		})
	}
}
