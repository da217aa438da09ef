package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hub/store"
)

// Several payloads in one Publish arrive in order; a payload of store.MaxPayload bytes is
// taken, and a longer one refused before anything is sent, saying how long it is.
func TestPostgresPublishMany(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a, b := twoReplicas(t)
	got := make(chan string, 256)
	done := make(chan error, 1)
	go func() { done <- b.Listen(ctx, func(p string) { got <- p }) }()
	if p := <-got; p != "" {
		t.Fatalf("first call = %q, want \"\" (listening)", p)
	}

	var want []string
	for i := range 100 {
		want = append(want, fmt.Sprintf("payload %03d", i))
	}
	want = append(want, strings.Repeat("x", store.MaxPayload))
	must(t, a.Publish(ctx, want...))
	err := a.Publish(ctx, "not sent", strings.Repeat("y", store.MaxPayload+1))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes, more than the %d a notification holds", store.MaxPayload+1, store.MaxPayload)) {
		t.Errorf("publishing %d bytes: error %v, want a refusal saying how long", store.MaxPayload+1, err)
	}
	must(t, a.Publish(ctx, "last"))
	for _, w := range append(want, "last") {
		select {
		case p := <-got:
			if p != w {
				t.Fatalf("got %.20q, want %.20q", p, w)
			}
		case <-ctx.Done():
			t.Fatalf("no notification %.20q", w)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Listen after its context ended: %v", err)
	}
}
