package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/faultproxy"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// twoReplicas opens the same fresh database twice, as two hub replicas would.
func twoReplicas(t *testing.T) (a, b *store.Postgres) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	a, b = openPostgres(t, dsn), openPostgres(t, dsn)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestPostgresLease(t *testing.T) {
	t.Parallel()
	t.Run("one holder at a time, renewable by it", func(t *testing.T) {
		ctx := t.Context()
		a, b := twoReplicas(t)
		for i, step := range []struct {
			s      *store.Postgres
			holder string
			want   bool
		}{
			{a, "replica-a", true},
			{b, "replica-b", false},
			{a, "replica-a", true}, // renewal
			{b, "replica-b", false},
		} {
			got, err := step.s.TryLease(ctx, "sources", step.holder, time.Minute)
			must(t, err)
			if got != step.want {
				t.Fatalf("step %d: TryLease(%s) = %v, want %v", i, step.holder, got, step.want)
			}
		}
		holder, until, err := b.LeaseHolder(ctx, "sources")
		must(t, err)
		if holder != "replica-a" || time.Until(until) < 50*time.Second {
			t.Errorf("LeaseHolder = %q until %v, want replica-a for about a minute", holder, until)
		}
		other, err := b.TryLease(ctx, "fleet", "replica-b", time.Minute)
		must(t, err)
		if !other {
			t.Error("a lease of another name is held by replica-a too")
		}
	})

	t.Run("moves when its holder lets it expire", func(t *testing.T) {
		ctx := t.Context()
		a, b := twoReplicas(t)
		got, err := a.TryLease(ctx, "sources", "replica-a", 200*time.Millisecond)
		must(t, err)
		if !got {
			t.Fatal("replica-a did not get a free lease")
		}
		// The lease expires on the database's clock (now()), which no test moves.
		eventually.Within(t, 10*time.Second, func() error {
			got, err := b.TryLease(ctx, "sources", "replica-b", time.Minute)
			must(t, err)
			if !got {
				holder, until, _ := b.LeaseHolder(ctx, "sources")
				return fmt.Errorf("replica-b has not taken the expired lease: held by %q until %v", holder, until)
			}
			return nil
		})
		if got, _ := a.TryLease(ctx, "sources", "replica-a", time.Minute); got {
			t.Error("replica-a renewed a lease replica-b had taken over")
		}
	})

	t.Run("released at once by its holder", func(t *testing.T) {
		ctx := t.Context()
		a, b := twoReplicas(t)
		_, err := a.TryLease(ctx, "sources", "replica-a", time.Hour)
		must(t, err)
		must(t, b.ReleaseLease(ctx, "sources", "replica-b")) // not the holder: no effect
		if got, _ := b.TryLease(ctx, "sources", "replica-b", time.Hour); got {
			t.Fatal("a non-holder released the lease")
		}
		must(t, a.ReleaseLease(ctx, "sources", "replica-a"))
		if got, _ := b.TryLease(ctx, "sources", "replica-b", time.Hour); !got {
			t.Error("the lease was not free after its holder released it")
		}
	})
}

func TestPostgresPublishListen(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	a, b := twoReplicas(t)
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() { done <- b.Listen(ctx, func(p string) { got <- p }) }()
	if p := <-got; p != "" {
		t.Fatalf("first call = %q, want \"\" (listening)", p)
	}
	for _, p := range []string{"desired edge-1", "removed edge-2"} {
		must(t, a.Publish(ctx, p))
	}
	for _, want := range []string{"desired edge-1", "removed edge-2"} {
		select {
		case p := <-got:
			if p != want {
				t.Errorf("got %q, want %q", p, want)
			}
		case <-ctx.Done():
			t.Fatalf("no notification %q", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Listen after its context ended: %v", err)
	}
}

func TestPostgresArtifacts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b := twoReplicas(t)
	must(t, a.PutArtifact(ctx, "sha256:aa", []byte("first")))
	must(t, a.PutArtifact(ctx, "sha256:aa", []byte("again"))) // same digest: kept as it was
	must(t, a.PutArtifact(ctx, "sha256:bb", []byte{0, 1, 2}))
	data, err := b.GetArtifact(ctx, "sha256:aa")
	must(t, err)
	if !bytes.Equal(data, []byte("first")) {
		t.Errorf("GetArtifact(aa) = %q, want %q", data, "first")
	}
	n, err := b.DeleteArtifactsExcept(ctx, map[string]bool{"sha256:bb": true})
	must(t, err)
	if n != 0 {
		t.Errorf("DeleteArtifactsExcept deleted %d artifacts stored just now, want 0 (grace period)", n)
	}
	// Age the rows past the grace period, as time would.
	_, err = a.DB().ExecContext(ctx, `UPDATE artifacts SET created_at = now() - interval '1 hour'`)
	must(t, err)
	n, err = b.DeleteArtifactsExcept(ctx, map[string]bool{"sha256:bb": true})
	must(t, err)
	if n != 1 {
		t.Errorf("DeleteArtifactsExcept deleted %d, want 1", n)
	}
	if _, err := a.GetArtifact(ctx, "sha256:aa"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetArtifact of a deleted artifact: err = %v, want ErrNotFound", err)
	}
	if _, err := a.GetArtifact(ctx, "sha256:bb"); err != nil {
		t.Errorf("GetArtifact of a kept artifact: %v", err)
	}
}

func TestPostgresShareFiles(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b := twoReplicas(t)
	first := map[string][]byte{"ca.crt": []byte("A cert"), "admin.token": []byte("A token")}
	got, err := a.ShareFiles(ctx, first)
	must(t, err)
	if diff := cmp.Diff(first, got); diff != "" {
		t.Errorf("first replica's files (-want +got):\n%s", diff)
	}
	got, err = b.ShareFiles(ctx, map[string][]byte{"ca.crt": []byte("B cert"), "admin.token": []byte("B token")})
	must(t, err)
	if diff := cmp.Diff(first, got); diff != "" {
		t.Errorf("second replica gets the first one's files (-want +got):\n%s", diff)
	}
	got, err = b.SharedFiles(ctx, []string{"ca.crt", "ca.key"})
	must(t, err)
	if diff := cmp.Diff(map[string][]byte{"ca.crt": []byte("A cert")}, got); diff != "" {
		t.Errorf("SharedFiles (-want +got):\n%s", diff)
	}
	must(t, b.PutSharedFile(ctx, "view.json", []byte("one")))
	must(t, a.PutSharedFile(ctx, "view.json", []byte("two")))
	got, err = b.SharedFiles(ctx, []string{"view.json"})
	must(t, err)
	if diff := cmp.Diff(map[string][]byte{"view.json": []byte("two")}, got); diff != "" {
		t.Errorf("after PutSharedFile twice (-want +got):\n%s", diff)
	}
}

// TestPostgresListenNoticesDeadConnection black-holes the listening connection (a partition
// that closes nothing): Listen must return an error rather than wait forever.
func TestPostgresListenNoticesDeadConnection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	u, err := url.Parse(pgtest.NewDatabase(t))
	must(t, err)
	proxy, err := faultproxy.Start(u.Host)
	must(t, err)
	defer proxy.Close()
	u.Host = proxy.Addr()
	s, err := store.OpenPostgres(ctx, u.String(), store.PostgresOptions{ListenCheck: 300 * time.Millisecond})
	must(t, err)
	defer s.Close()

	listening := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Listen(ctx, func(p string) {
			if p == "" {
				close(listening)
			}
		})
	}()
	<-listening
	// Quiet: a few checks pass on a live connection. Each check is a ping; each answer is
	// counted as bytes coming back through the proxy (nothing else talks on the store's
	// connections meanwhile), so three growths of that count are three answered checks.
	_, last := proxy.Bytes()
	answered := 0
	eventually.Within(t, 30*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("Listen ended on a live, quiet connection after %d answered checks: %v", answered, err)
		default:
		}
		if _, down := proxy.Bytes(); down > last {
			answered, last = answered+1, down
		}
		if answered < 3 {
			return fmt.Errorf("%d checks of the quiet connection answered, want 3", answered)
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("Listen ended on a live, quiet connection: %v", err)
	default:
	}
	proxy.Blackhole(true)
	defer proxy.Blackhole(false)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "does not answer") {
			t.Errorf("Listen on a dead connection returned %v, want an error saying it does not answer", err)
		}
	case <-ctx.Done():
		t.Fatal("Listen still waits on a connection that stopped answering")
	}
}
