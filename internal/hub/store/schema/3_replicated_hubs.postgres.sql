
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
