package store

import "testing"

// The password deploy/hub-ha once shipped is known to everyone: a hub refuses it, in the URL
// or in PGPASSWORD, and accepts any other.
func TestCheckPasswordRefusesTheExampleOne(t *testing.T) {
	t.Parallel()
	refused := `store postgres://...: the PostgreSQL password is "change-me", the example one everyone knows: set a password of your own (docs/ha.md)`
	for _, tt := range []struct {
		location, pgPassword, want string
	}{
		{"postgres://flotilla:change-me@db:5432/flotilla?sslmode=verify-full", "", refused},
		{"postgres://flotilla@db:5432/flotilla?sslmode=verify-full", "change-me", refused},
		{"postgres://flotilla:change-me@db/flotilla", "s3cret-of-mine", refused},
		{"postgres://flotilla:s3cret-of-mine@db/flotilla", "change-me", ""},
		{"postgres://flotilla@db/flotilla", "s3cret-of-mine", ""},
		{"", "change-me", ""}, // SQLite: no password at all
	} {
		err := CheckPassword(tt.location, tt.pgPassword)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("CheckPassword(%q, %q) = %q, want %q", tt.location, tt.pgPassword, got, tt.want)
		}
	}
}
