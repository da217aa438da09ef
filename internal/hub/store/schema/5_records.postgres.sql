
-- Small documents the hub's controller and user API share, by kind and key: rollouts,
-- freezes, suspended clusters, sync requests (store.Record). version rises by one at each
-- write, so that writers on several replicas update them by compare-and-swap.
CREATE TABLE records (
	kind       TEXT NOT NULL,
	key        TEXT NOT NULL,
	data       BYTEA NOT NULL,
	version    BIGINT NOT NULL CHECK (version > 0),
	updated_at TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (kind, key)
);
