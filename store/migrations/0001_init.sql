-- Incidents: what the gateway refused, blocked or flagged. Times are Unix
-- nanoseconds (UTC). Nothing here is ever a secret: snippets are redacted and
-- fingerprints are keyed hashes.
CREATE TABLE incidents (
	id           TEXT PRIMARY KEY,
	at           INTEGER NOT NULL,
	tenant       TEXT NOT NULL DEFAULT '',
	class        TEXT NOT NULL DEFAULT '',
	run          TEXT NOT NULL DEFAULT '',
	kind         TEXT NOT NULL DEFAULT '',
	reason       TEXT NOT NULL DEFAULT '',
	action       TEXT NOT NULL DEFAULT '',
	host         TEXT NOT NULL DEFAULT '',
	port         INTEGER NOT NULL DEFAULT 0,
	method       TEXT NOT NULL DEFAULT '',
	path         TEXT NOT NULL DEFAULT '',
	client       TEXT NOT NULL DEFAULT '',
	rule         TEXT NOT NULL DEFAULT '',
	location     TEXT NOT NULL DEFAULT '',
	decoding     TEXT NOT NULL DEFAULT '',
	snippet      TEXT NOT NULL DEFAULT '',
	fingerprint  TEXT NOT NULL DEFAULT '',
	triage       TEXT NOT NULL DEFAULT 'new',
	triage_note  TEXT NOT NULL DEFAULT '',
	triage_actor TEXT NOT NULL DEFAULT '',
	triage_at    INTEGER NOT NULL DEFAULT 0
);

-- Keyset paging is by (at DESC, id DESC). Every filter has an index that
-- starts with its column and continues in paging order, so that a filtered
-- page is one index range read, however many rows the table holds.
CREATE INDEX incidents_at          ON incidents (at, id);
CREATE INDEX incidents_tenant      ON incidents (tenant, at, id);
CREATE INDEX incidents_run         ON incidents (run, at, id);
CREATE INDEX incidents_class       ON incidents (class, at, id);
CREATE INDEX incidents_kind        ON incidents (kind, at, id);
CREATE INDEX incidents_rule        ON incidents (rule, at, id);
CREATE INDEX incidents_action      ON incidents (action, at, id);
CREATE INDEX incidents_host        ON incidents (host, at, id);
CREATE INDEX incidents_triage      ON incidents (triage, at, id);
CREATE INDEX incidents_fingerprint ON incidents (fingerprint, at, id);

-- Every triage change, in order. Pruning an incident prunes its history.
CREATE TABLE triage_history (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	incident_id TEXT NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
	at          INTEGER NOT NULL,
	actor       TEXT NOT NULL,
	from_state  TEXT NOT NULL,
	to_state    TEXT NOT NULL,
	note        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX triage_history_incident ON triage_history (incident_id, seq);

-- Runs: one sandbox launch. Only a hash of the run token is kept.
CREATE TABLE runs (
	id          TEXT PRIMARY KEY,
	tenant      TEXT NOT NULL,
	class       TEXT NOT NULL,
	token_hash  TEXT NOT NULL UNIQUE,
	created_at  INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL DEFAULT 0,
	ended_at    INTEGER NOT NULL DEFAULT 0,
	repo_remote TEXT NOT NULL DEFAULT '',
	manifests   TEXT NOT NULL DEFAULT '[]',
	extra       TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX runs_tenant ON runs (tenant, created_at, id);

-- Tenants' requests for broader access, and the security team's decisions.
CREATE TABLE access_requests (
	id            TEXT PRIMARY KEY,
	tenant        TEXT NOT NULL,
	host          TEXT NOT NULL,
	ports         TEXT NOT NULL DEFAULT '[]',
	methods       TEXT NOT NULL DEFAULT '[]',
	paths         TEXT NOT NULL DEFAULT '[]',
	justification TEXT NOT NULL DEFAULT '',
	expires_at    INTEGER NOT NULL,
	state         TEXT NOT NULL DEFAULT 'pending'
	              CHECK (state IN ('pending', 'approved', 'denied', 'expired')),
	reviewer      TEXT NOT NULL DEFAULT '',
	reason        TEXT NOT NULL DEFAULT '',
	created_at    INTEGER NOT NULL,
	decided_at    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX access_requests_tenant ON access_requests (tenant, created_at, id);
CREATE INDEX access_requests_state  ON access_requests (state, expires_at);

-- The audit log is append-only: the triggers refuse any change to a row
-- (and, in PostgreSQL, emptying the table). Every migration is written once
-- for both engines: INTEGER becomes BIGINT in PostgreSQL, and "-- only" blocks
-- hold what the engines spell differently.
CREATE TABLE audit_log (
	id     INTEGER PRIMARY KEY AUTOINCREMENT,
	at     INTEGER NOT NULL,
	actor  TEXT NOT NULL,
	action TEXT NOT NULL,
	tenant TEXT NOT NULL DEFAULT '',
	target TEXT NOT NULL DEFAULT '',
	detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_tenant ON audit_log (tenant, id);
-- only sqlite
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit_log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit_log is append-only');
END;
-- end
-- only postgres
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'audit_log is append-only';
END;
$$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
	FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
	FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
-- end
