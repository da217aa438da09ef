// Package pgtest gives each test a PostgreSQL database of its own, on the server `make
// postgres` starts (or the one FLOTILLA_TEST_POSTGRES names), so that test packages run in
// parallel against one server without seeing each other's rows. The databases collate text
// by ICU's en-US rules, so a query that depends on byte order must say so (COLLATE "C").
//
// There is no skipping: a test that needs PostgreSQL and finds none fails, naming the make
// target that provides one.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla/flotilla/internal/faultproxy"
)

// EnvDSN names the environment variable holding the connection string of a server on which
// the tests' role may CREATE DATABASE; the Makefile and .ci/run set it.
const EnvDSN = "FLOTILLA_TEST_POSTGRES"

// DefaultDSN is the server `make postgres` starts (tools/postgres/start.sh), used when EnvDSN
// is unset so that `go test` works after a `make postgres`.
const DefaultDSN = "postgres://flotilla@127.0.0.1:55432/postgres?sslmode=disable"

// ServerDSN is the connection string of the test server's maintenance database.
func ServerDSN() string {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn
	}
	return DefaultDSN
}

// NewDatabase creates an empty database with a generated name, drops it (with any connection
// still open to it) when t ends, and returns the connection string to it.
func NewDatabase(t testing.TB) string {
	t.Helper()
	server := ServerDSN()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("no PostgreSQL for the tests at %s: %v\n"+
			"run `make postgres` (installs Debian's postgresql if missing and starts a server under out/postgres), "+
			"or set %s to a server where this role may CREATE DATABASE; `make test-postgres` does both",
			redact(server), err, EnvDSN)
	}
	defer func() { _ = conn.Close(ctx) }() // on the way out: the queries' own errors are checked
	name := "flotilla_test_" + randomHex(8)
	// A natural-language collation, as production databases usually have, rather than the
	// test server's C: a query that relies on byte order without saying so shows here.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"); err != nil {
		t.Fatalf("create test database %s on %s (ICU collation en-US): %v", name, redact(server), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer func() { _ = conn.Close(ctx) }() // on the way out: the queries' own errors are checked
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return withDatabase(t, server, name)
}

// withDatabase returns dsn with its database replaced by name.
func withDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL, got %q", EnvDSN, redact(dsn))
	}
	u.Path = "/" + name
	return u.String()
}

// redact hides the password of a postgres:// URL.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable connection string)"
	}
	return u.Redacted()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on Linux
	}
	return hex.EncodeToString(b)
}

// BehindProxy creates a test database and returns its DSN, the same DSN through a fault proxy
// (to cut a hub off the database), and that proxy, closed when t ends.
func BehindProxy(t testing.TB) (dsn, proxied string, proxy *faultproxy.Proxy) {
	t.Helper()
	dsn = NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if proxy, err = faultproxy.Start(u.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() }) // test cleanup: the proxy is discarded
	u.Host = proxy.Addr()
	return dsn, u.String(), proxy
}
