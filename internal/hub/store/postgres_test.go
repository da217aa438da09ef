package store_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/store/storetest"
	"github.com/flotilla/flotilla/internal/pgtest"
)

func TestPostgresContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return openPostgres(t, pgtest.NewDatabase(t))
	})
}

func openPostgres(t testing.TB, dsn string) *store.Postgres {
	t.Helper()
	s, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPostgresMigrations(t *testing.T) {
	t.Parallel()
	t.Run("replicas starting at once migrate once", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				s, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
				if err == nil {
					err = s.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if got := appliedVersions(t, dsn); got != store.SchemaVersion {
			t.Errorf("schema_migrations has %d rows, want %d", got, store.SchemaVersion)
		}
	})

	t.Run("a database from a newer hub is refused", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		must(t, openPostgres(t, dsn).Close())
		conn, err := pgx.Connect(t.Context(), dsn)
		must(t, err)
		defer conn.Close(context.Background())
		_, err = conn.Exec(t.Context(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'from the future', now())`, store.SchemaVersion+1)
		must(t, err)
		_, err = store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
		if err == nil || !strings.Contains(err.Error(), "newer flotilla") {
			t.Errorf("OpenPostgres on a newer schema: err = %v, want one saying a newer flotilla wrote it", err)
		}
	})

	t.Run("data survives reopening", func(t *testing.T) {
		ctx, dsn := t.Context(), pgtest.NewDatabase(t)
		s := openPostgres(t, dsn)
		must(t, s.AddCluster(ctx, store.Cluster{Name: "edge-1", CreatedAt: time.Now()}))
		must(t, s.Close())
		s = openPostgres(t, dsn)
		defer s.Close()
		if _, err := s.GetCluster(ctx, "edge-1"); err != nil {
			t.Errorf("after reopening: %v", err)
		}
	})
}

func appliedVersions(t *testing.T, dsn string) int {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	must(t, err)
	defer db.Close()
	var n int
	must(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n))
	return n
}

func TestPostgresUnreachable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"nothing listens", "postgres://flotilla:s3cret@127.0.0.1:1/hub?sslmode=disable&connect_timeout=2", "cannot connect"},
		{"not a connection string", "postgres://flotilla:s3cret@[::1/hub", "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := store.OpenPostgres(t.Context(), tc.dsn, store.PostgresOptions{ConnectTimeout: 3 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
