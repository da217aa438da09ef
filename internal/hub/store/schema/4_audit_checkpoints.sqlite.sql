
-- Each assignment's audit checkpoint (audit.Checkpoint): the state its last full audit record
-- stated, and the unchanged checks since its last record in the chain.
CREATE TABLE audit_checkpoints (
	cluster        TEXT NOT NULL REFERENCES clusters (name),
	release        TEXT NOT NULL,
	revision       TEXT NOT NULL,
	digest         TEXT NOT NULL,
	phase          TEXT NOT NULL,
	health         TEXT NOT NULL,
	since          INTEGER NOT NULL,
	chained_at     INTEGER NOT NULL,
	first_verified INTEGER NOT NULL,
	last_verified  INTEGER NOT NULL,
	checks         INTEGER NOT NULL CHECK (checks >= 0),
	PRIMARY KEY (cluster, release)
) STRICT, WITHOUT ROWID;
