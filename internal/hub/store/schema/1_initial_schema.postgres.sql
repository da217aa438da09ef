
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
