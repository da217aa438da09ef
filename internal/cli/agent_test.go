package cli

import (
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/agent"
)

// The agent verb's flags default to the agent package's defaults: one place says what an
// agent started without them uses.
func TestAgentFlagDefaults(t *testing.T) {
	t.Parallel()
	def := agent.DefaultOptions()
	f := newAgentCommand(streams{out: io.Discard, errOut: io.Discard}).Flags()
	for _, tc := range []struct {
		flag string
		want string
	}{
		{"heartbeat-interval", def.HeartbeatInterval.String()},
		{"report-interval", def.ReportInterval.String()},
		{"max-backoff", def.MaxBackoff.String()},
		{"max-outbox", strconv.Itoa(def.MaxOutbox)},
	} {
		fl := f.Lookup(tc.flag)
		if fl == nil {
			t.Errorf("--%s missing", tc.flag)
			continue
		}
		if fl.DefValue != tc.want {
			t.Errorf("--%s defaults to %s; the agent's default is %s", tc.flag, fl.DefValue, tc.want)
		}
	}
	if def.HeartbeatInterval != 30*time.Second || def.MaxOutbox != 10000 {
		t.Errorf("agent defaults changed: %+v; update the docs that quote them", def)
	}
}
