package replica_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hub/agentapi"
	"github.com/flotilla/flotilla/internal/hub/replica"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// BenchmarkFanout measures the fan-out of a reschedule that changed every cluster's desired
// state, at 480 and 10,000 clusters: from the moment the desired states are stored until the
// watch of every cluster, open on another replica, has been woken through PostgreSQL's
// LISTEN/NOTIFY (ns/op, µs/cluster), and how long the replica that changed them spent
// publishing (publish-ms/op: what holds up its reschedule).
//
// path=per-cluster sends one NOTIFY per cluster, as the hub did before batching: the baseline
// to compare path=batched with in the same run.
//
//	go test -run '^$' -bench BenchmarkFanout -benchtime 5x ./internal/hub/replica
func BenchmarkFanout(b *testing.B) {
	dsn := pgtest.NewDatabase(b)
	pub := openBenchStore(b, dsn)
	sender := benchReplication(b, pub, "replica-a", replica.Handlers{})
	watchers := agentapi.NewWatchers()
	benchReplication(b, openBenchStore(b, dsn), "replica-b", replica.Handlers{OnDesired: watchers.NotifyLocal})

	for _, n := range []int{480, 10000} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("cluster-%05d", i)
		}
		// Every cluster's agent watches on replica-b.
		var woken sync.WaitGroup
		var stops []func()
		for _, c := range names {
			ch, stop, err := watchers.Subscribe(c)
			if err != nil {
				b.Fatal(err)
			}
			stops = append(stops, stop)
			go func() {
				for range ch {
					woken.Done()
				}
			}()
		}
		publish := map[string]func(string){
			"per-cluster": func(c string) {
				payload, _ := json.Marshal(replica.Event{Replica: "replica-a", Kind: replica.EventDesired, Cluster: c})
				if err := pub.Publish(context.Background(), string(payload)); err != nil {
					b.Error(err)
				}
			},
			"batched": func(c string) { sender.Publish(replica.Event{Kind: replica.EventDesired, Cluster: c}) },
		}
		for _, path := range []string{"per-cluster", "batched"} {
			b.Run(fmt.Sprintf("clusters=%d/path=%s", n, path), func(b *testing.B) {
				var publishing time.Duration
				for b.Loop() {
					woken.Add(n)
					start := time.Now()
					for _, c := range names {
						publish[path](c)
					}
					publishing += time.Since(start)
					woken.Wait()
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/cluster")
				b.ReportMetric(float64(publishing.Milliseconds())/float64(b.N), "publish-ms/op")
			})
		}
		for _, stop := range stops {
			stop()
		}
	}
}

func openBenchStore(b *testing.B, dsn string) *store.Postgres {
	st, err := store.OpenPostgres(b.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// benchReplication runs a replica on st until the benchmark ends, and waits until it listens.
func benchReplication(b *testing.B, st *store.Postgres, id string, on replica.Handlers) *replica.Replication {
	r, err := replica.New(b.Context(), replica.Config{
		Store: st, Options: replica.Options{ID: id}, Logger: slog.New(slog.DiscardHandler),
		Identity: replica.Identity{DataDir: b.TempDir(), Create: func() error { return nil }},
	})
	if err != nil {
		b.Fatal(err)
	}
	listening := make(chan struct{})
	var once sync.Once
	on.OnResync = func(context.Context) { once.Do(func() { close(listening) }) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx, on) }()
	b.Cleanup(func() { cancel(); <-done })
	<-listening
	return r
}
