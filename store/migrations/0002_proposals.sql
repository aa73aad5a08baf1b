-- Proposals: what a reviewer suggests to the maintainers when marking an
-- incident a false positive: a detection rule allowlist entry or a policy
-- entry. They are suggestions shown on the dashboard's rules page; nothing
-- here changes the policy by itself.
CREATE TABLE proposals (
	id          TEXT PRIMARY KEY,
	at          INTEGER NOT NULL,
	incident_id TEXT NOT NULL DEFAULT '',
	tenant      TEXT NOT NULL DEFAULT '',
	kind        TEXT NOT NULL,
	rule        TEXT NOT NULL DEFAULT '',
	host        TEXT NOT NULL DEFAULT '',
	path        TEXT NOT NULL DEFAULT '',
	reason      TEXT NOT NULL DEFAULT '',
	actor       TEXT NOT NULL,
	state       TEXT NOT NULL DEFAULT 'open',
	closed_by   TEXT NOT NULL DEFAULT '',
	closed_at   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX proposals_state ON proposals (state, at, id);
