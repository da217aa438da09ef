package agentapi

import (
	"fmt"
	"sync"
)

// MaxStreamsPerCluster bounds the watch streams one cluster holds open on one replica. An
// agent holds one, two for a moment while it reconnects; a stolen or shared identity must
// not be able to hold the hub's goroutines and memory by the thousand.
const MaxStreamsPerCluster = 4

// Watchers wakes the watch streams of a cluster when its desired state changes, and ends them
// when the cluster is removed.
//
// With replicas sharing a store, a cluster's agent may watch on another replica: Notify and
// CloseCluster then also tell the other replicas (OnNotify, OnClose), and the replicas that
// receive it call NotifyLocal and CloseLocal.
type Watchers struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	// OnNotify and OnClose, if set, tell the other replicas; they are called outside mu.
	// Set them before the watchers are used.
	OnNotify, OnClose func(cluster string)
}

// NewWatchers returns watchers with no streams.
func NewWatchers() *Watchers { return &Watchers{subs: map[string]map[chan struct{}]struct{}{}} }

// Subscribe returns a channel that receives a value after each change of cluster's desired
// state (changes in between coalesce) and is closed when the cluster is removed. It refuses a
// stream beyond MaxStreamsPerCluster.
func (w *Watchers) Subscribe(cluster string) (<-chan struct{}, func(), error) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if n := len(w.subs[cluster]); n >= MaxStreamsPerCluster {
		w.mu.Unlock()
		return nil, nil, fmt.Errorf("cluster %q already has %d watch streams open on this hub, the most one cluster may hold", cluster, n)
	}
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
	}, nil
}

// Notify wakes the cluster's streams here and on the other replicas.
func (w *Watchers) Notify(cluster string) {
	w.NotifyLocal(cluster)
	if w.OnNotify != nil {
		w.OnNotify(cluster)
	}
}

// NotifyLocal wakes the cluster's streams on this replica.
func (w *Watchers) NotifyLocal(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[cluster] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// CloseCluster ends every stream of a removed cluster, here and on the other replicas.
func (w *Watchers) CloseCluster(cluster string) {
	w.CloseLocal(cluster)
	if w.OnClose != nil {
		w.OnClose(cluster)
	}
}

// CloseLocal ends the removed cluster's streams on this replica.
func (w *Watchers) CloseLocal(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[cluster] {
		close(ch)
	}
	delete(w.subs, cluster)
}

// Clusters returns the clusters with a stream open here.
func (w *Watchers) Clusters() []string {
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

// Count is the number of open watch streams (agents connected).
func (w *Watchers) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, s := range w.subs {
		n += len(s)
	}
	return n
}
