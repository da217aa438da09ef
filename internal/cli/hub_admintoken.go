package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/store"
)

func newHubRotateAdminTokenCommand(s streams) *cobra.Command {
	var dataDir, location string
	cmd := &cobra.Command{
		Use:   "rotate-admin-token --store postgres://... [--data-dir D]",
		Short: "Replace the bootstrap admin token of hub replicas sharing a PostgreSQL store",
		Long: `Make a new bootstrap admin token for the hub replicas that share --store, print it, and
make the old one stop working on every running replica at once.

The store keeps only the token's hash: the token itself is in the admin.token of the replica
that made it, and the other replicas' admin.token holds its hash ("sha256:..."). Use this when
that token is lost or has leaked. With --data-dir the new token is also written to that
directory's admin.token. The replicas need not be stopped.

A single hub (SQLite store) reads admin.token at start: stop it, delete the file, and start it
to have a new one written.`,
		Example: `  flotilla hub rotate-admin-token --store "postgres://flotilla@db:5432/flotilla?sslmode=verify-full"
  kubectl -n flotilla-system exec flotilla-hub-0 -- flotilla hub rotate-admin-token \
    --store "$FLOTILLA_STORE" --data-dir /data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if location == "" {
				return usageError{fmt.Errorf("--store is required: the postgres:// URL the replicas share")}
			}
			if err := store.CheckPassword(location, os.Getenv("PGPASSWORD")); err != nil {
				return err
			}
			st, err := store.Open(cmd.Context(), location, "")
			if err != nil {
				return err
			}
			defer func() { _ = st.Close() }() // on the way out: every write was committed
			tok, err := hub.RotateAdminToken(cmd.Context(), st, dataDir)
			if tok != "" {
				fmt.Fprintln(s.out, tok)
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(s.errOut, "The replicas sharing the store accept this admin token now; the one before no longer opens any of them.")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&location, "store", "", "postgres:// URL of the store the replicas share (required); PGPASSWORD and the other PG* variables apply")
	f.StringVar(&dataDir, "data-dir", "", "also write the new token to admin.token in this data dir")
	return cmd
}
