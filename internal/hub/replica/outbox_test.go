package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func desired(clusters ...string) Event { return Event{Kind: EventDesired, Clusters: clusters} }

// The outbox keeps changes in order, merges a run of desired-state changes into one event
// naming each cluster once, and drops a change repeated at once.
func TestOutbox(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		add  []Event
		want []Event
	}{
		{"a run of desired-state changes is one event, each cluster once",
			[]Event{{Kind: EventDesired, Cluster: "a"}, {Kind: EventDesired, Cluster: "b"}, {Kind: EventDesired, Cluster: "a"}, desired("c", "b")},
			[]Event{desired("a", "b", "c")}},
		{"a removal ends the run: the cluster's later change is sent after it",
			[]Event{{Kind: EventDesired, Cluster: "a"}, {Kind: EventRemoved, Cluster: "a"}, {Kind: EventDesired, Cluster: "a"}},
			[]Event{desired("a"), {Kind: EventRemoved, Cluster: "a"}, desired("a")}},
		{"the same change twice in a row is one; other kinds keep their order",
			[]Event{{Kind: EventClusters}, {Kind: EventClusters}, {Kind: EventView}, {Kind: EventRemoved, Cluster: "a"}, {Kind: EventRemoved, Cluster: "a"}, {Kind: EventRemoved, Cluster: "b"}, {Kind: EventClusters}},
			[]Event{{Kind: EventClusters}, {Kind: EventView}, {Kind: EventRemoved, Cluster: "a"}, {Kind: EventRemoved, Cluster: "b"}, {Kind: EventClusters}}},
		{"a desired-state change naming no cluster is nothing",
			[]Event{{Kind: EventDesired}, {Kind: EventView}},
			[]Event{{Kind: EventView}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOutbox()
			for _, e := range tc.add {
				o.add(e)
			}
			got, overflowed := o.take()
			if diff := cmp.Diff(tc.want, got); diff != "" || overflowed {
				t.Errorf("queued (-want +got), overflowed %v:\n%s", overflowed, diff)
			}
			if again, _ := o.take(); len(again) != 0 {
				t.Errorf("a second take returned %v, want nothing", again)
			}
		})
	}

	t.Run("events put back go before those queued since", func(t *testing.T) {
		o := newOutbox()
		o.add(Event{Kind: EventDesired, Cluster: "a"})
		sent, _ := o.take()
		o.add(Event{Kind: EventDesired, Cluster: "b"})
		o.putBack(sent)
		o.add(Event{Kind: EventDesired, Cluster: "c"})
		got, _ := o.take()
		if diff := cmp.Diff([]Event{desired("a"), desired("b", "c")}, got); diff != "" {
			t.Errorf("queued (-want +got):\n%s", diff)
		}
	})

	t.Run("past its bound, one resync stands for everything queued", func(t *testing.T) {
		o := newOutbox()
		for i := range maxQueued {
			o.add(Event{Kind: EventRemoved, Cluster: fmt.Sprint("c-", i)})
		}
		o.add(Event{Kind: EventDesired, Cluster: "last"})
		got, overflowed := o.take()
		if diff := cmp.Diff([]Event{{Kind: EventResync}, desired("last")}, got); diff != "" || !overflowed {
			t.Errorf("queued (-want +got), overflowed %v (want true):\n%s", overflowed, diff)
		}
		// Put back onto a full queue (an event and maxQueued-1 clusters): the same.
		for i := range maxQueued - 1 {
			o.add(Event{Kind: EventDesired, Cluster: fmt.Sprint("c-", i)})
		}
		o.putBack([]Event{{Kind: EventView}})
		got, overflowed = o.take()
		if diff := cmp.Diff([]Event{{Kind: EventResync}}, got); diff != "" || !overflowed {
			t.Errorf("after putBack (-want +got), overflowed %v (want true):\n%s", overflowed, diff)
		}
	})
}

// Payloads hold every cluster once, in order, each payload within the limit and valid JSON;
// one cluster is encoded as before batching; a name that cannot fit is left out and named.
func TestPayloads(t *testing.T) {
	t.Parallel()
	var clusters []string
	for i := range 1000 {
		clusters = append(clusters, fmt.Sprintf("cluster-%04d.eu-west-1.prod.example.com", i))
	}
	const limit = 7999
	ps, err := payloads("replica-a", []Event{desired(clusters...), {Kind: EventRemoved, Cluster: "x"}, desired("y")}, limit)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, p := range ps[:len(ps)-2] {
		if len(p) > limit {
			t.Errorf("payload %d: %d bytes, more than %d", i, len(p), limit)
		}
		if i < len(ps)-3 && len(p) < limit-100 {
			t.Errorf("payload %d: %d bytes, the limit is %d: more would have fit", i, len(p), limit)
		}
		var e Event
		if err := json.Unmarshal([]byte(p), &e); err != nil {
			t.Fatalf("payload %d does not parse: %v", i, err)
		}
		if e.Replica != "replica-a" || e.Kind != EventDesired || e.Cluster != "" {
			t.Errorf("payload %d: %+v", i, e)
		}
		got = append(got, e.Clusters...)
	}
	if !slices.Equal(got, clusters) {
		t.Errorf("the payloads name %d clusters, want the %d given in order", len(got), len(clusters))
	}
	if want := []string{`{"r":"replica-a","k":"removed","c":"x"}`, `{"r":"replica-a","k":"desired","c":"y"}`}; !slices.Equal(ps[len(ps)-2:], want) {
		t.Errorf("last payloads %q, want %q", ps[len(ps)-2:], want)
	}

	long := strings.Repeat("a", 80)
	ps, err = payloads("replica-a", []Event{desired("short", long, "other"), {Kind: EventRemoved, Cluster: long}}, 70)
	if err == nil || !strings.Contains(err.Error(), `desired "`+long+`"`) || !strings.Contains(err.Error(), `removed "`+long+`"`) {
		t.Errorf("error %v, want one naming both changes of %s", err, long)
	}
	if want := []string{`{"r":"replica-a","k":"desired","cs":["short","other"]}`}; !slices.Equal(ps, want) {
		t.Errorf("payloads %q, want %q", ps, want)
	}
}

// Changes the store does not take are sent again after a backoff, in order, with those
// queued meanwhile after them; what is queued when the replica stops is sent before send
// returns.
func TestFanoutSendRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &fakeShared{err: errors.New("connection refused")}
		f := newFanout(st, "a", nil, slog.New(slog.DiscardHandler))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { f.send(ctx); close(done) }()
		f.publish(Event{Kind: EventDesired, Cluster: "eu-1"})
		f.publish(Event{Kind: EventRemoved, Cluster: "eu-2"})
		synctest.Wait()
		// synctest bubble: this Sleep advances the bubble's fake clock, no real wait.
		time.Sleep(time.Second) // several failed tries
		f.publish(Event{Kind: EventDesired, Cluster: "eu-3"})
		st.setErr(nil)
		// synctest bubble: this Sleep advances the bubble's fake clock, no real wait.
		time.Sleep(10 * time.Second) // the longest backoff
		synctest.Wait()
		f.publish(Event{Kind: EventView})
		cancel()
		<-done
		want := []string{`{"r":"a","k":"desired","c":"eu-1"}`, `{"r":"a","k":"removed","c":"eu-2"}`, `{"r":"a","k":"desired","c":"eu-3"}`, `{"r":"a","k":"view"}`}
		st.mu.Lock()
		defer st.mu.Unlock()
		if diff := cmp.Diff(want, st.published); diff != "" {
			t.Errorf("published (-want +got):\n%s", diff)
		}
	})
}

func TestNewRefusesLongID(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("r", MaxIDLength+1)
	_, err := New(t.Context(), Config{Options: Options{ID: id}})
	if want := fmt.Sprintf(`replica ID "rrrrrrrrrrrrrrrrrrrr"...: %d bytes, longer than %d`, MaxIDLength+1, MaxIDLength); err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if _, err := New(t.Context(), Config{Options: Options{ID: id[1:]}}); err != nil {
		t.Errorf("an ID of %d bytes: %v", MaxIDLength, err)
	}
}
