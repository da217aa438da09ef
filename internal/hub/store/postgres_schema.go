package store

import _ "embed" // the PostgreSQL texts of the migrations

// The PostgreSQL texts of the migrations in migrations.go, one file per step under schema/
// (named for the step's version and name): the same tables, keys and checks as the SQLite
// steps of the same version. Released steps are never edited.
//
// A time the caller gives is NULL for the zero time (SQLite's 0), so that "never" and "not yet"
// read the same in SQL on both stores.
var (
	//go:embed schema/1_initial_schema.postgres.sql
	postgresInitialSchema string
	//go:embed schema/2_compacted_reports.postgres.sql
	postgresCompactions string
	//go:embed schema/3_replicated_hubs.postgres.sql
	postgresReplication string
	//go:embed schema/4_audit_checkpoints.postgres.sql
	postgresAuditCheckpoints string
	//go:embed schema/5_records.postgres.sql
	postgresRecords string
)
