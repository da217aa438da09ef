package pgtest_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla/flotilla/internal/pgtest"
)

func TestDatabasesAreSeparateAndDropped(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var first string
	t.Run("first", func(t *testing.T) {
		first = pgtest.NewDatabase(t)
		conn, err := pgx.Connect(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `CREATE TABLE marker (x int)`); err != nil {
			t.Fatal(err)
		}
	})
	second := pgtest.NewDatabase(t)
	if second == first {
		t.Fatalf("two tests got the same database %s", first)
	}
	conn, err := pgx.Connect(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'marker'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("the second database has the first test's table")
	}
	if _, err := pgx.Connect(ctx, first); err == nil {
		t.Errorf("the first test's database still exists after its test ended")
	}
}
