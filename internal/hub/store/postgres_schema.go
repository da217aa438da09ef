package store

// The PostgreSQL texts of the migrations in migrations.go: the same tables, keys and checks as
// the SQLite steps of the same version. Released steps are never edited.
//
// A time the caller gives is NULL for the zero time (SQLite's 0), so that "never" and "not yet"
// read the same in SQL on both stores.

const postgresInitialSchema = `
CREATE TABLE clusters (
	name          TEXT PRIMARY KEY,
	labels        JSONB NOT NULL,
	created_at    TIMESTAMPTZ,
	last_seen     TIMESTAMPTZ,
	agent_version TEXT NOT NULL DEFAULT ''
);

-- No foreign key to clusters: a token may be issued before its cluster registers.
CREATE TABLE join_tokens (
	id          TEXT PRIMARY KEY,
	secret_hash BYTEA NOT NULL,
	cluster     TEXT NOT NULL,
	expires_at  TIMESTAMPTZ,
	used_at     TIMESTAMPTZ
);
CREATE INDEX join_tokens_by_cluster ON join_tokens (cluster);

-- No foreign key to clusters: certificates outlive their cluster, revoked, so that a
-- removed cluster's agent stays locked out.
CREATE TABLE certificates (
	serial    TEXT PRIMARY KEY,
	cluster   TEXT NOT NULL,
	not_after TIMESTAMPTZ,
	revoked   BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX certificates_by_cluster ON certificates (cluster);

CREATE TABLE desired_states (
	cluster    TEXT PRIMARY KEY REFERENCES clusters (name),
	generation BIGINT NOT NULL CHECK (generation > 0),
	document   BYTEA NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL
);

-- One row per ingested report: the primary key is what makes ingestion idempotent.
CREATE TABLE reports (
	cluster     TEXT NOT NULL REFERENCES clusters (name),
	seq         BIGINT NOT NULL,
	ingested_at TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (cluster, seq)
);

CREATE TABLE statuses (
	cluster             TEXT NOT NULL REFERENCES clusters (name),
	release             TEXT NOT NULL,
	observed_generation BIGINT NOT NULL,
	revision            TEXT NOT NULL,
	digest              TEXT NOT NULL,
	phase               TEXT NOT NULL,
	health              TEXT NOT NULL,
	objects             BIGINT NOT NULL,
	drifted             BOOLEAN NOT NULL,
	conflicts           BIGINT NOT NULL,
	error               TEXT NOT NULL,
	detail              BYTEA,
	reported_at         TIMESTAMPTZ,
	updated_at          TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (cluster, release)
);

CREATE TABLE source_statuses (
	name       TEXT PRIMARY KEY,
	url        TEXT NOT NULL,
	revision   TEXT NOT NULL,
	digest     TEXT NOT NULL,
	error      TEXT NOT NULL,
	checked_at TIMESTAMPTZ
);

-- A single row (id 1) once the fleet status is first set.
CREATE TABLE fleet_status (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	revision   TEXT NOT NULL,
	error      TEXT NOT NULL,
	updated_at TIMESTAMPTZ
);
`

const postgresCompactions = `
-- Reports an agent's bounded outbox dropped before it could send them, as the agent said with
-- the report seq that carried the count: keyed by (cluster, seq) so a resent report counts once.
CREATE TABLE compactions (
	cluster TEXT NOT NULL REFERENCES clusters (name),
	seq     BIGINT NOT NULL,
	reports BIGINT NOT NULL CHECK (reports > 0),
	PRIMARY KEY (cluster, seq)
);
`

const postgresReplication = `
-- Leases say which replica does a job only one may do at a time (polling the sources).
-- expires_at is the database's clock, so replicas' clocks need not agree.
CREATE TABLE leases (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL
);

-- Artifacts as the replica that packed them uploaded them, so that every replica can serve
-- every assigned artifact; keyed by digest, so content is stored once.
CREATE TABLE artifacts (
	digest     TEXT PRIMARY KEY,
	data       BYTEA NOT NULL,
	created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Files every replica must hold alike (the CA certificate and key, the admin token): the
-- first replica to start stores its own, the others take them.
CREATE TABLE shared_files (
	name TEXT PRIMARY KEY,
	data BYTEA NOT NULL
);
`
