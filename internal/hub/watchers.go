package hub

import "sync"

// watchers wakes the watch streams of a cluster when its desired state changes, and ends them
// when the cluster is removed.
type watchers struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
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

func (w *watchers) notify(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[cluster] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// closeCluster ends every stream of a removed cluster.
func (w *watchers) closeCluster(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[cluster] {
		close(ch)
	}
	delete(w.subs, cluster)
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
