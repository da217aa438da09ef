package fleetsim

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
)

// MemCluster is a simulated cluster: it keeps, per assignment, a hash of every object it
// holds (never the object itself, so that millions of objects fit in memory), answers
// "unchanged" for an object whose hash it already has, and counts what it writes. It is an
// agent.Target for pull mode and the store behind a push-mode endpoint.
type MemCluster struct {
	name string

	mu   sync.Mutex
	sets map[string]map[uint64]uint64 // assignment -> object identity hash -> content hash

	writes, unchanged, pruned atomic.Int64
	// lastWrite is when the cluster last wrote an object (Unix nanoseconds): after a wave
	// that changes every object, when this cluster converged.
	lastWrite atomic.Int64
}

// NewMemCluster returns an empty simulated cluster.
func NewMemCluster(name string) *MemCluster {
	return &MemCluster{name: name, sets: map[string]map[uint64]uint64{}}
}

// Name is the cluster's name.
func (c *MemCluster) Name() string { return c.name }

// Counts are what a simulated cluster did: objects written (created or changed), objects
// found unchanged, objects pruned.
type Counts struct {
	Writes    int64 `json:"writes"`
	Unchanged int64 `json:"unchanged"`
	Pruned    int64 `json:"pruned"`
}

// Counts returns the counters so far.
func (c *MemCluster) Counts() Counts {
	return Counts{Writes: c.writes.Load(), Unchanged: c.unchanged.Load(), Pruned: c.pruned.Load()}
}

// LastWrite is when the cluster last wrote an object; zero before the first.
func (c *MemCluster) LastWrite() time.Time {
	if n := c.lastWrite.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Objects is the number of objects the cluster holds.
func (c *MemCluster) Objects() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.sets {
		n += len(s)
	}
	return n
}

// Digest identifies the cluster's content (every assignment's objects and their content),
// independent of the order they arrived in: two clusters with the same digest hold the same
// objects.
func (c *MemCluster) Digest() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.sets))
	for n := range c.sets {
		names = append(names, n)
	}
	sort.Strings(names)
	h := fnv.New64a()
	for _, n := range names {
		var sum uint64 // order-independent within an assignment
		for id, content := range c.sets[n] {
			sum += mix(id, content)
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", n, len(c.sets[n]), sum)
	}
	return h.Sum64()
}

func mix(a, b uint64) uint64 {
	x := a*0x9e3779b97f4a7c15 ^ b
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	return x ^ x>>29
}

// apply records one object of an assignment and says what that was.
func (c *MemCluster) apply(assignment string, id, content uint64) reconcile.Action {
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.sets[assignment]
	if set == nil {
		set = map[uint64]uint64{}
		c.sets[assignment] = set
	}
	old, had := set[id]
	switch {
	case had && old == content:
		c.unchanged.Add(1)
		return reconcile.Unchanged
	case had:
		set[id] = content
		c.writes.Add(1)
		c.lastWrite.Store(time.Now().UnixNano())
		return reconcile.Configured
	default:
		set[id] = content
		c.writes.Add(1)
		c.lastWrite.Store(time.Now().UnixNano())
		return reconcile.Created
	}
}

// delete removes one object of an assignment; it reports whether the object was there.
func (c *MemCluster) delete(assignment string, id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sets[assignment][id]; !ok {
		return false
	}
	delete(c.sets[assignment], id)
	c.pruned.Add(1)
	return true
}

// Reconcile implements agent.Target: every object is hashed (with the assignment's namespace
// when it has none, as the reconciler applies it) and written unless the cluster already
// holds that content; with Prune, objects of the assignment that left the set are pruned.
func (c *MemCluster) Reconcile(ctx context.Context, objects []*unstructured.Unstructured, opts reconcile.Options) (*reconcile.Result, error) {
	res := &reconcile.Result{Name: opts.Name, DryRun: opts.DryRun}
	keep := make(map[uint64]bool, len(objects))
	for _, o := range objects {
		if err := ctx.Err(); err != nil {
			res.Error = err.Error()
			return res, err
		}
		ref, id, content, err := hashObject(o, opts.Namespace)
		if err != nil {
			err = fmt.Errorf("assignment %q: %w", opts.Name, err)
			res.Error = err.Error()
			return res, err
		}
		keep[id] = true
		action := reconcile.Unchanged
		if !opts.DryRun {
			action = c.apply(opts.Name, id, content)
		}
		res.Objects = append(res.Objects, reconcile.ObjectResult{ObjectRef: ref, Action: action})
	}
	if opts.Prune && !opts.DryRun {
		c.mu.Lock()
		var gone []uint64
		for id := range c.sets[opts.Name] {
			if !keep[id] {
				gone = append(gone, id)
			}
		}
		c.mu.Unlock()
		for _, id := range gone {
			if c.delete(opts.Name, id) {
				res.Objects = append(res.Objects, reconcile.ObjectResult{Action: reconcile.Pruned})
			}
		}
	}
	if opts.Wait {
		ready := true
		res.Ready = &ready
	}
	return res, nil
}

// Remove implements agent.Target: the assignment's objects are pruned.
func (c *MemCluster) Remove(_ context.Context, name string) (*reconcile.Result, error) {
	c.mu.Lock()
	set := c.sets[name]
	delete(c.sets, name)
	c.mu.Unlock()
	c.pruned.Add(int64(len(set)))
	res := &reconcile.Result{Name: name}
	for range set {
		res.Objects = append(res.Objects, reconcile.ObjectResult{Action: reconcile.Pruned})
	}
	return res, nil
}

// Inventories implements agent.Target.
func (c *MemCluster) Inventories(context.Context) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.sets))
	for n := range c.sets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// hashObject returns the object's reference, the hash of its identity and the hash of its
// content as it would be stored: with namespace ns when it names none. Push and pull hash
// the same way, so their clusters' digests compare.
func hashObject(o *unstructured.Unstructured, ns string) (reconcile.ObjectRef, uint64, uint64, error) {
	if o.GetNamespace() == "" && ns != "" {
		o = o.DeepCopy()
		o.SetNamespace(ns)
	}
	gvk := o.GroupVersionKind()
	ref := reconcile.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}
	body, err := json.Marshal(o.Object) // map keys sorted: a canonical form
	if err != nil {
		return ref, 0, 0, fmt.Errorf("%s in %q: encode: %w", ref, ref.Namespace, err)
	}
	return ref, identityHash(ref), contentHash(body), nil
}

func identityHash(ref reconcile.ObjectRef) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", ref.Group, ref.Kind, ref.Namespace, ref.Name)
	return h.Sum64()
}

func contentHash(body []byte) uint64 {
	h := fnv.New64a()
	h.Write(body)
	return h.Sum64()
}
