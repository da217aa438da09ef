package eventually

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestPoll(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		holdsAt int // the poll at which cond first holds; 0: never
		timeout time.Duration
		wantErr string
	}{
		{name: "holds at once", holdsAt: 1, timeout: time.Second},
		{name: "holds after a few polls", holdsAt: 5, timeout: time.Second},
		{name: "never holds: the last error is named", timeout: time.Second, wantErr: "not within 1s: poll 21: replicas 1, want 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				polls := 0
				err := Poll(context.Background(), tt.timeout, func() error {
					polls++
					if tt.holdsAt != 0 && polls >= tt.holdsAt {
						return nil
					}
					return errors.New("poll " + strconv.Itoa(polls) + ": replicas 1, want 3")
				})
				if tt.wantErr == "" {
					if err != nil || polls != tt.holdsAt {
						t.Fatalf("err %v after %d polls, want nil after %d", err, polls, tt.holdsAt)
					}
					return
				}
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
			})
		})
	}
}

func TestPollEndsWithItsContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		err := Poll(ctx, time.Hour, True("the hub answers", func() bool { return false }))
		if err == nil || !strings.Contains(err.Error(), "gave up after 200ms") || !strings.Contains(err.Error(), "the hub answers: not yet") {
			t.Fatalf("err %v, want the wait given up after 200ms naming the condition", err)
		}
	})
}
