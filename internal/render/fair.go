package render

import (
	"context"
	"sync"
)

// fair bounds the renders running at once and, when all slots are taken, hands each slot
// that frees to the next Project in turn (round-robin between the Projects waiting), so that a
// Project whose renders keep failing or running to their budget holds at most its turn of the
// slots and never starves the others, however many renders it queues.
type fair struct {
	mu      sync.Mutex
	free    int
	queues  map[string][]*waiter // by project, oldest first
	ring    []string             // projects with waiters, in turn order
	nextIdx int
}

type waiter struct {
	granted chan struct{}
	done    bool // granted (under mu)
}

func newFair(n int) *fair { return &fair{free: n, queues: map[string][]*waiter{}} }

// acquire waits for a slot for project and returns its release.
func (f *fair) acquire(ctx context.Context, project string) (func(), error) {
	f.mu.Lock()
	if f.free > 0 && len(f.ring) == 0 {
		f.free--
		f.mu.Unlock()
		return f.releaseOnce(), nil
	}
	w := &waiter{granted: make(chan struct{})}
	if len(f.queues[project]) == 0 {
		f.ring = append(f.ring, project)
	}
	f.queues[project] = append(f.queues[project], w)
	f.mu.Unlock()

	select {
	case <-w.granted:
		return f.releaseOnce(), nil
	case <-ctx.Done():
		f.mu.Lock()
		if w.done { // granted as ctx ended: hand the slot on
			f.mu.Unlock()
			f.release()
			return nil, ctx.Err()
		}
		f.remove(project, w)
		f.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (f *fair) releaseOnce() func() {
	var once sync.Once
	return func() { once.Do(f.release) }
}

// release frees a slot, or hands it to the next project's oldest waiter.
func (f *fair) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ring) == 0 {
		f.free++
		return
	}
	if f.nextIdx >= len(f.ring) {
		f.nextIdx = 0
	}
	p := f.ring[f.nextIdx]
	q := f.queues[p]
	w := q[0]
	if len(q) == 1 {
		delete(f.queues, p)
		f.ring = append(f.ring[:f.nextIdx], f.ring[f.nextIdx+1:]...)
		// nextIdx now names the project after p.
	} else {
		f.queues[p] = q[1:]
		f.nextIdx++
	}
	w.done = true
	close(w.granted)
}

// remove drops a waiter that gave up (under mu).
func (f *fair) remove(project string, w *waiter) {
	q := f.queues[project]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		f.queues[project] = q
		return
	}
	delete(f.queues, project)
	for i, p := range f.ring {
		if p == project {
			f.ring = append(f.ring[:i], f.ring[i+1:]...)
			if f.nextIdx > i {
				f.nextIdx--
			}
			break
		}
	}
}
