-- Triage at volume: the reason is a filter and a sort key like the other
-- columns, so it gets the same kind of index (its column, then paging order).
CREATE INDEX incidents_reason ON incidents (reason, at, id);
