package render

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
)

// TestFairSlotsTakeProjectsInTurn: with every slot taken, a project that queues many renders
// gets one slot in turn with each other waiting project, however many it queued first; a
// waiter that gives up takes no slot and leaves the others' order as it was.
func TestFairSlotsTakeProjectsInTurn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		queue  []string // projects queueing a render, in this order, while the one slot is held
		cancel int      // index in queue of a waiter that gives up before any release; -1: none
		want   []string // the order in which the queued renders get the slot
	}{
		{
			name:   "the platform's one render goes second, not after the team's five",
			queue:  []string{"team-a", "team-a", "team-a", "team-a", "team-a", "platform"},
			cancel: -1,
			want:   []string{"team-a", "platform", "team-a", "team-a", "team-a", "team-a"},
		},
		{
			name:   "three projects in turn",
			queue:  []string{"team-a", "team-a", "team-b", "team-b", "platform"},
			cancel: -1,
			want:   []string{"team-a", "team-b", "platform", "team-a", "team-b"},
		},
		{
			name:   "a waiter that gives up takes no slot",
			queue:  []string{"team-a", "platform", "team-a"},
			cancel: 1,
			want:   []string{"team-a", "team-a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				f := newFair(1)
				hold, err := f.acquire(context.Background(), "holder")
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				granted := make(chan string)
				releases := make([]func(), 0, len(tt.queue))
				var cancels []context.CancelFunc
				for i, p := range tt.queue {
					ctx, cancel := context.WithCancel(context.Background())
					cancels = append(cancels, cancel)
					go func() {
						rel, err := f.acquire(ctx, p)
						if err != nil {
							return
						}
						releases = append(releases, rel) // one holder at a time: no race
						granted <- p
					}()
					synctest.Wait() // queued before the next one
					if i == tt.cancel {
						t.Cleanup(cancel)
					}
				}
				if tt.cancel >= 0 {
					cancels[tt.cancel]()
					synctest.Wait()
				}
				hold()
				for range tt.want {
					got = append(got, <-granted)
					releases[len(releases)-1]()
				}
				synctest.Wait()
				if !slices.Equal(got, tt.want) {
					t.Errorf("slots went to %v, want %v", got, tt.want)
				}
				if f.free != 1 || len(f.ring) != 0 || len(f.queues) != 0 {
					t.Errorf("after every render: %d free, ring %v, queues %v; want 1 free and nothing waiting", f.free, f.ring, f.queues)
				}
				for _, c := range cancels {
					c()
				}
			})
		})
	}
}
