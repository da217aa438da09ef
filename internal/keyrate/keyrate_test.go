package keyrate

import (
	"fmt"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
)

func TestBucketsEvictIdleKeys(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := New[string](c, 20, 40, 0) // idle after 40/20 = 2s: a bucket that old is full again
	for i := range 10_000 {
		b.Get(fmt.Sprintf("cluster-%05d", i))
	}
	// Drain one bucket: it must not come back full while it is not yet refilled.
	drained := b.Get("cluster-00000")
	for drained.AllowN(c.Now(), 1) {
	}
	if got := b.Len(); got != 10_000 {
		t.Fatalf("%d buckets; want 10000", got)
	}
	c.Advance(time.Second)
	if b.Get("cluster-00000") != drained {
		t.Fatal("a bucket in use was replaced")
	}
	c.Advance(10 * time.Second)
	b.Get("cluster-00001")
	if got := b.Len(); got != 1 {
		t.Errorf("%d buckets after every other key was idle past 2s; want 1", got)
	}
}

func TestBucketsBoundTheKeys(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := New[string](c, 1, 1, 2)
	b.Get("a")
	b.Get("b")
	over := b.Get("c")
	if b.Get("d") != over || b.Len() != 2 {
		t.Fatalf("keys past the bound got buckets of their own (%d kept); want them to share one", b.Len())
	}
	if !over.AllowN(c.Now(), 1) || b.Get("e").AllowN(c.Now(), 1) {
		t.Error("the shared bucket of keys past the bound does not limit them together")
	}
}
