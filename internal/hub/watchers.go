package hub

import "sync"

// watchers wakes the watch streams of a cluster when its desired state changes, and ends them
// when the cluster is removed.
//
// With replicas sharing a store, a cluster's agent may watch on another replica: notify and
// closeCluster then also publish the change (see fanout), and the replicas that receive it
// call notifyLocal and closeLocal.
type watchers struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	// publish, if set, tells the other replicas; it is called outside mu.
	publish func(kind eventKind, cluster string)
}

func newWatchers() *watchers { return &watchers{subs: map[string]map[chan struct{}]struct{}{}} }

// subscribe returns a channel that receives a value after each change of cluster's desired
// state (changes in between coalesce) and is closed when the cluster is removed.
func (w *watchers) subscribe(cluster string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.subs[cluster] == nil {
		w.subs[cluster] = map[chan struct{}]struct{}{}
	}
	w.subs[cluster][ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.subs[cluster][ch]; ok {
			delete(w.subs[cluster], ch)
			close(ch)
		}
	}
}

// notify wakes the cluster's streams here and on the other replicas.
func (w *watchers) notify(cluster string) {
	w.notifyLocal(cluster)
	if w.publish != nil {
		w.publish(eventDesired, cluster)
	}
}

// notifyLocal wakes the cluster's streams on this replica.
func (w *watchers) notifyLocal(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[cluster] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// closeCluster ends every stream of a removed cluster, here and on the other replicas.
func (w *watchers) closeCluster(cluster string) {
	w.closeLocal(cluster)
	if w.publish != nil {
		w.publish(eventRemoved, cluster)
	}
}

// closeLocal ends the removed cluster's streams on this replica.
func (w *watchers) closeLocal(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[cluster] {
		close(ch)
	}
	delete(w.subs, cluster)
}

// clusters returns the clusters with a stream open here.
func (w *watchers) clusters() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.subs))
	for c, s := range w.subs {
		if len(s) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// count is the number of open watch streams (agents connected).
func (w *watchers) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, s := range w.subs {
		n += len(s)
	}
	return n
}
