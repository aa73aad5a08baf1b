-- The review loop: what the gateway knows of an access request filed from a
-- sandbox (its run, class and refusal), the scope a reviewer granted it, and
-- how many filings and held connections it stands for. Beside
-- access_requests, one row per request filed or decided with a scope.
CREATE TABLE access_request_context (
	id       TEXT PRIMARY KEY,
	run      TEXT NOT NULL DEFAULT '',
	class    TEXT NOT NULL DEFAULT '',
	incident TEXT NOT NULL DEFAULT '',
	-- scope of the grant: 'run' (that run only), 'class' (the run's class)
	-- or 'tenant' (every class); '' as 'tenant'.
	scope    TEXT NOT NULL DEFAULT '',
	joined   INTEGER NOT NULL DEFAULT 1,
	held     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX access_request_context_run ON access_request_context (run);

-- What the tenants' runs did that was allowed (or let through in shadow
-- mode), for drafting a policy from observation: one row per tenant, class,
-- run, host, port, method and path prefix, with counts and first and last
-- time seen. Written in batches off the hot path; bounded per tenant.
CREATE TABLE observations (
	tenant     TEXT NOT NULL,
	class      TEXT NOT NULL,
	run        TEXT NOT NULL DEFAULT '',
	host       TEXT NOT NULL,
	port       INTEGER NOT NULL,
	method     TEXT NOT NULL,
	path       TEXT NOT NULL,
	verdict    TEXT NOT NULL,
	count      INTEGER NOT NULL,
	first_seen INTEGER NOT NULL,
	last_seen  INTEGER NOT NULL,
	PRIMARY KEY (tenant, class, run, host, port, method, path, verdict)
);
CREATE INDEX observations_seen ON observations (tenant, last_seen);
