
-- Reports an agent's bounded outbox dropped before it could send them, as the agent said with
-- the report seq that carried the count: keyed by (cluster, seq) so a resent report counts once.
CREATE TABLE compactions (
	cluster TEXT NOT NULL REFERENCES clusters (name),
	seq     BIGINT NOT NULL,
	reports BIGINT NOT NULL CHECK (reports > 0),
	PRIMARY KEY (cluster, seq)
);
