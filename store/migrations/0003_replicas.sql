-- Replicas sharing this database: each says which policy version it runs,
-- so that one whose policy differs from its peers' can say so. A row is a
-- heartbeat, not a record: rows not seen for a day are dropped.
CREATE TABLE replicas (
	id             TEXT PRIMARY KEY,
	policy_version TEXT NOT NULL DEFAULT '',
	started_at     INTEGER NOT NULL,
	seen_at        INTEGER NOT NULL
);
CREATE INDEX replicas_seen ON replicas (seen_at);
