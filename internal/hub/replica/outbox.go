package replica

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// maxQueued bounds the changes an outbox holds (events, and clusters of desired-state
// events): ten times a fleet of 10,000 clusters changing at once.
const maxQueued = 100_000

// outbox holds the changes this replica is yet to send the others, in order. A run of
// desired-state changes is one event naming every cluster of the run, sent in as few
// notifications as hold them; a cluster named again within the run is named once (a wake-up
// says "read your desired state again", not what changed). A change queued after another is
// sent after it: a cluster's removal is never overtaken by its earlier desired-state change,
// nor the other way round.
type outbox struct {
	mu    sync.Mutex
	queue []Event
	// open are the clusters of the queue's last event while it is a desired-state one: a
	// desired-state change joins it.
	open   map[string]bool
	queued int // events and desired-state clusters in queue
	// overflowed says the queue was replaced by one EventResync since the last take.
	overflowed bool
	// ready is signalled whenever the queue is not empty.
	ready chan struct{}
}

func newOutbox() *outbox { return &outbox{ready: make(chan struct{}, 1)} }

// add queues e. Past maxQueued changes, everything queued is replaced by one EventResync,
// which makes every other replica resynchronise: memory stays bounded and nothing is lost.
func (o *outbox) add(e Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	defer o.signal()
	if o.queued >= maxQueued {
		o.queue, o.open, o.queued, o.overflowed = []Event{{Kind: EventResync}}, nil, 1, true
	}
	if e.Kind == EventDesired {
		for _, c := range e.Clusters {
			o.addDesired(c)
		}
		o.addDesired(e.Cluster)
		return
	}
	if n := len(o.queue); n > 0 && o.queue[n-1].Kind == e.Kind && o.queue[n-1].Cluster == e.Cluster {
		return // the same change twice in a row is one
	}
	o.queue = append(o.queue, Event{Kind: e.Kind, Cluster: e.Cluster})
	o.queued++
	o.open = nil
}

// addDesired adds cluster to the desired-state event at the end of the queue, opening one if
// the last event is another.
func (o *outbox) addDesired(cluster string) {
	if cluster == "" || o.open[cluster] {
		return
	}
	if o.open == nil {
		o.queue = append(o.queue, Event{Kind: EventDesired})
		o.queued++
		o.open = map[string]bool{}
	}
	last := &o.queue[len(o.queue)-1]
	last.Clusters = append(last.Clusters, cluster)
	o.open[cluster] = true
	o.queued++
}

// take empties the queue and returns what it held, and whether it overflowed since the last
// take.
func (o *outbox) take() (events []Event, overflowed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	events, overflowed = o.queue, o.overflowed
	o.queue, o.open, o.queued, o.overflowed = nil, nil, 0, false
	return events, overflowed
}

// putBack queues events, which take returned and could not be sent, before what was queued
// since.
func (o *outbox) putBack(events []Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	defer o.signal()
	n := 0
	for _, e := range events {
		n += 1 + len(e.Clusters)
	}
	if o.queued+n > maxQueued {
		o.queue, o.open, o.queued, o.overflowed = []Event{{Kind: EventResync}}, nil, 1, true
		return
	}
	o.queue = append(events, o.queue...)
	o.queued += n
}

func (o *outbox) signal() {
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// payloads encodes events from replica as notification payloads of at most limit bytes each,
// in order. A desired-state event for one cluster is encoded as before batching (Cluster), so
// that a replica of an earlier version still wakes it; more clusters are split across as few
// payloads as hold them. A cluster whose name does not fit in a payload is left out, named in
// the error.
func payloads(replica string, events []Event, limit int) ([]string, error) {
	var out []string
	var errs []string
	for _, e := range events {
		e.Replica = replica
		if e.Kind != EventDesired || len(e.Clusters) <= 1 {
			if e.Kind == EventDesired {
				e.Cluster, e.Clusters = e.Clusters[0], nil
			}
			p, err := json.Marshal(e)
			if err != nil {
				return nil, err
			}
			if len(p) > limit {
				errs = append(errs, fmt.Sprintf("%s %q: %d bytes", e.Kind, e.Cluster, len(p)))
				continue
			}
			out = append(out, string(p))
			continue
		}
		head, err := json.Marshal(Event{Replica: replica, Kind: EventDesired})
		if err != nil {
			return nil, err
		}
		// {"r":...,"k":"desired"} becomes {"r":...,"k":"desired","cs":[...]}.
		prefix := string(head[:len(head)-1]) + `,"cs":[`
		const suffix = `]}`
		var b strings.Builder
		for _, c := range e.Clusters {
			name, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			if len(prefix)+len(name)+len(suffix) > limit {
				errs = append(errs, fmt.Sprintf("desired %q: %d bytes", c, len(prefix)+len(name)+len(suffix)))
				continue
			}
			if b.Len() > 0 && b.Len()+1+len(name)+len(suffix) > limit {
				b.WriteString(suffix)
				out = append(out, b.String())
				b.Reset()
			}
			if b.Len() == 0 {
				b.WriteString(prefix)
			} else {
				b.WriteByte(',')
			}
			b.Write(name)
		}
		if b.Len() > 0 {
			b.WriteString(suffix)
			out = append(out, b.String())
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("changes left out, longer than the %d bytes a notification holds: %s", limit, strings.Join(errs, "; "))
	}
	return out, nil
}
