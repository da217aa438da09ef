package hub

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/faultproxy"
	"github.com/flotilla/flotilla/internal/hub/agentapi"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// TestSilentAgentConnectionClosedByPing: an agent's connection that stops carrying anything
// (a partition that does not answer) is closed by the hub when its HTTP/2 PING goes
// unanswered, which ends the watch stream that kept the cluster heard from. The client here
// sends no PINGs of its own; the hub's are short, so the test waits a few real seconds at
// most: net/http's PING timers have no clock to inject. It waits on answered PINGs, not on a
// fixed time.
func TestSilentAgentConnectionClosedByPing(t *testing.T) {
	t.Parallel()
	th := startHub(t, "", func(o *Options) {
		o.AgentPing = agentapi.Ping{Interval: 300 * time.Millisecond, Timeout: 300 * time.Millisecond}
	})
	a := th.addAgent(t, "edge", nil)
	proxy, err := faultproxy.Start(th.agentLn.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	defer proxy.Blackhole(false) // a black-holed proxy's copies never end
	client := agentv1connect.NewAgentServiceClient(a.http, "https://"+proxy.Addr())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := client.Watch(ctx, connect.NewRequest(&agentv1.WatchRequest{AgentVersion: "v1"}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if !stream.Receive() {
		t.Fatalf("watch: %v", stream.Err())
	}
	if !stream.Msg().GetStreamLiveness() {
		t.Fatalf("first watch message %v; want stream_liveness set", stream.Msg())
	}
	if n := th.watchers.Count(); n != 1 {
		t.Fatalf("%d watch streams open at the hub; want 1", n)
	}
	// Answered PINGs keep the connection: a few of the hub's PINGs are answered with it open.
	// The client sends nothing else, so each growth of the bytes it sends through the proxy is
	// an answer to one of the hub's PINGs (300ms apart: two never fall between polls).
	up, _ := proxy.Bytes()
	answered := 0
	eventually.Within(t, 30*time.Second, func() error {
		if n, _ := proxy.Bytes(); n > up {
			answered, up = answered+1, n
		}
		if answered < 3 {
			return fmt.Errorf("%d of the hub's PINGs answered (%d watch streams open), want 3", answered, th.watchers.Count())
		}
		return nil
	})
	if n := th.watchers.Count(); n != 1 {
		t.Fatalf("%d watch streams open at the hub after answered PINGs; want 1", n)
	}

	proxy.Blackhole(true)
	ended := make(chan error, 1)
	go func() {
		for stream.Receive() {
		}
		ended <- stream.Err()
	}()
	eventually.Within(t, 30*time.Second, func() error {
		if n := th.watchers.Count(); n != 0 {
			return fmt.Errorf("the hub kept the silent connection's watch stream open: %d open, want 0", n)
		}
		return nil
	})
	if c, err := th.api.Cluster(t.Context(), "edge"); err != nil || c.LastSeen == nil || !c.Reachable {
		t.Errorf("cluster after its stream ended: %+v, %v; want reachable, heard from until the stream ended", c, err)
	}
	proxy.Blackhole(false) // the proxy passes the hub's close on
	select {
	case err := <-ended:
		t.Logf("the agent's stream ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Error("the agent's side of the stream did not end")
	}
}
