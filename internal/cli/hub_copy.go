package cli

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/store/storecopy"
)

func newHubCopyStoreCommand(s streams) *cobra.Command {
	var dataDir, to string
	format := newChoice("table", "json")
	cmd := &cobra.Command{
		Use:   "copy-store --data-dir D --to postgres://...",
		Short: "Copy a hub's SQLite store into an empty PostgreSQL database, to move the hub to replicas",
		Long: `Copy everything the hub keeps in its SQLite store (hub.db in --data-dir) into an empty
PostgreSQL database, in one transaction: clusters, join tokens, certificates, desired states
with their generations, statuses and report accounting. Agents then carry on against hubs
started with --store on that database as if their hub had restarted.

Stop the hub first. Then start the first replica with the same --data-dir: it stores its CA
and admin token in the database for the other replicas (docs/ha.md). The copy refuses a
database that already holds hub state.`,
		Example: `  flotilla hub copy-store --data-dir /var/lib/flotilla \
    --to "postgres://flotilla@db.example.com:5432/flotilla?sslmode=verify-full"   # password: PGPASSWORD
  flotilla hub --data-dir /var/lib/flotilla --store "postgres://..." --fleet ...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" || to == "" {
				return usageError{fmt.Errorf("--data-dir and --to are required")}
			}
			ctx := cmd.Context()
			path := filepath.Join(dataDir, store.SQLiteFile)
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("sqlite store: %w", err)
			}
			src, err := store.OpenSQLite(ctx, path)
			if err != nil {
				return err
			}
			defer func() { _ = src.Close() }() // only read from
			dst, err := store.OpenPostgres(ctx, to, store.PostgresOptions{})
			if err != nil {
				return err
			}
			defer func() { _ = dst.Close() }() // the copy was committed
			stats, err := storecopy.ToPostgres(ctx, src, dst)
			if err != nil {
				return err
			}
			// The named tokens of the user API live beside the store's tables.
			if stats["user_tokens"], err = access.CopyTokens(ctx, src.DB(), dst.DB()); err != nil {
				return fmt.Errorf("copy to postgres store %s: %w", dst, err)
			}
			if format.Value == "json" {
				return writeJSON(s.out, stats)
			}
			tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TABLE\tROWS")
			for _, t := range slices.Sorted(maps.Keys(stats)) {
				fmt.Fprintf(tw, "%s\t%d\n", t, stats[t])
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(s.errOut, "Copied %s into %s.\n", path, dst)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "data dir of the hub whose SQLite store to copy (required)")
	f.StringVar(&to, "to", "", "postgres:// URL of an empty database (required)")
	f.VarP(format, "output", "o", "output format: table or json")
	return cmd
}
