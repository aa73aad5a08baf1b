package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

// searchColumns are what IncidentFilter.Search looks in: what a reviewer
// remembers of an incident (a host, a path, a rule, a run, a note).
var searchColumns = []string{"host", "path", "rule", "run", "fingerprint", "triage_note"}

// searchCond is the condition for a partial, case-insensitive match of s
// in any search column: one LIKE over the columns joined by a separator
// no search can hold (U+0001, dropped from s), six times cheaper than a
// LIKE per column. LIKE's wildcards in s match themselves; LOWER on both
// sides because PostgreSQL's LIKE is case-sensitive and SQLite's is not.
func searchCond(s string) (string, []any) {
	s = strings.ReplaceAll(strings.ToLower(s), searchSep, "")
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
	return "LOWER(" + strings.Join(searchColumns, " || '"+searchSep+"' || ") + `) LIKE ? ESCAPE '\'`, []any{"%" + esc + "%"}
}

// searchSep separates the columns a search looks in.
const searchSep = "\x01"

// SortKeys are the columns a listing can be sorted by besides time.
var SortKeys = []string{"tenant", "run", "class", "kind", "reason", "action", "rule", "host", "triage"}

// sortedQuery orders by f.Sort, then newest first, and pages by offset:
// a listing sorted by host is read page by page rarely enough.
func (f IncidentFilter) sortedQuery() (string, []any, error) {
	if !slices.Contains(SortKeys, f.Sort) {
		return "", nil, fmt.Errorf("%w: sort by %q (want one of %s)", ErrInvalid, f.Sort, strings.Join(SortKeys, ", "))
	}
	if f.After != "" {
		return "", nil, fmt.Errorf("%w: a sorted listing pages by offset, not by cursor", ErrInvalid)
	}
	where, args := f.where()
	dir := "DESC"
	if f.Asc {
		dir = "ASC"
	}
	q := "SELECT " + incidentColumns + " FROM incidents" + where + " ORDER BY " + f.Sort + " " + dir +
		", at DESC, id DESC LIMIT ? OFFSET ?"
	return q, append(args, f.limit()+1, max(f.Offset, 0)), nil
}

// CountIncidents counts the incidents matching f.
func (s *Store) CountIncidents(ctx context.Context, f IncidentFilter) (int64, error) {
	where, args := f.where()
	var n int64
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM incidents"+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count incidents: %w", err)
	}
	return n, nil
}

// GroupKeys are what GroupIncidents can group by.
var GroupKeys = []string{"fingerprint", "rule", "host"}

// IncidentGroup is the incidents sharing one value of a column.
type IncidentGroup struct {
	Key   string
	Count int64
	// New counts those still untriaged.
	New int64
	// Latest is the newest incident's time.
	Latest time.Time
}

// GroupIncidents groups the incidents matching f by one of GroupKeys, the
// largest groups first, at most n (zero: 100) groups; incidents with an
// empty key are left out.
func (s *Store) GroupIncidents(ctx context.Context, f IncidentFilter, by string, n int) ([]IncidentGroup, error) {
	if !slices.Contains(GroupKeys, by) {
		return nil, fmt.Errorf("%w: group by %q (want one of %s)", ErrInvalid, by, strings.Join(GroupKeys, ", "))
	}
	if n <= 0 || n > 1000 {
		n = 100
	}
	where, args := f.where()
	q := `SELECT ` + by + `, COUNT(*) AS c, SUM(CASE WHEN triage = ? THEN 1 ELSE 0 END), MAX(at) FROM incidents` +
		and(where, by+" != ''") + ` GROUP BY ` + by + ` ORDER BY c DESC, ` + by + ` LIMIT ?`
	args = append(append([]any{incident.TriageNew}, args...), n)
	return queryAll(ctx, s.db, "group incidents", func(sc rowScanner) (IncidentGroup, error) {
		var g IncidentGroup
		var at int64
		err := sc.Scan(&g.Key, &g.Count, &g.New, &at)
		g.Latest = fromNanos(at)
		return g, err
	}, q, args...)
}

// ChoiceColumns are the columns Choices answers for.
var ChoiceColumns = []string{"tenant", "class", "kind", "reason", "action", "rule", "triage", "host", "run"}

// Choices returns the values col takes among incidents matching f, the
// most frequent first, at most n: a filter offered as a choice.
func (s *Store) Choices(ctx context.Context, f IncidentFilter, col string, n int) ([]KeyCount, error) {
	if !slices.Contains(ChoiceColumns, col) {
		return nil, fmt.Errorf("%w: choices of %q", ErrInvalid, col)
	}
	return s.top(ctx, col, f, n)
}

// RuleTrend is a rule's false positives in the last period and the one before.
type RuleTrend struct {
	Rule           string
	Recent, Before int64
}

// RisingFalsePositives returns the rules with more incidents triaged as
// false positives in [now-period, now) than in the period before, most
// recent first. tenant "" is every tenant.
func (s *Store) RisingFalsePositives(ctx context.Context, tenant string, now time.Time, period time.Duration) ([]RuleTrend, error) {
	mid, start := now.Add(-period).UnixNano(), now.Add(-2*period).UnixNano()
	f := IncidentFilter{Tenant: tenant, Triage: incident.TriageFalsePositive, Since: time.Unix(0, start), Until: now}
	where, args := f.where()
	q := `SELECT rule, SUM(CASE WHEN at >= ? THEN 1 ELSE 0 END) AS recent, SUM(CASE WHEN at < ? THEN 1 ELSE 0 END)
		FROM incidents` + and(where, "rule != ''") + ` GROUP BY rule ORDER BY recent DESC, rule`
	all, err := queryAll(ctx, s.db, "rising false positives", func(sc rowScanner) (RuleTrend, error) {
		var t RuleTrend
		return t, sc.Scan(&t.Rule, &t.Recent, &t.Before)
	}, q, append([]any{mid, mid}, args...)...)
	var out []RuleTrend
	for _, t := range all {
		if t.Recent > t.Before {
			out = append(out, t)
		}
	}
	return out, err
}

// MaxBulkTriage bounds one bulk triage: a group larger than this is
// triaged in several steps, so that one transaction stays short.
const MaxBulkTriage = 5000

// MatchingIDs returns the ids of the incidents matching f, newest first,
// at most MaxBulkTriage (f's Limit and paging are ignored).
func (s *Store) MatchingIDs(ctx context.Context, f IncidentFilter) ([]string, error) {
	where, args := f.where()
	return queryAll(ctx, s.db, "matching ids", func(sc rowScanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	}, "SELECT id FROM incidents"+where+" ORDER BY at DESC, id DESC LIMIT ?", append(args, MaxBulkTriage)...)
}

// TriageIncidents triages every incident in ids with one note, all in one
// transaction (all or none), each with its history and audit entry as
// TriageIncident does. allow, when not nil, is asked for each incident's
// tenant: an incident it refuses is ErrNotFound, as if it did not exist.
// It returns how many incidents changed.
func (s *Store) TriageIncidents(ctx context.Context, ids []string, u TriageUpdate, allow func(tenant string) bool) (int, error) {
	if err := u.check(); err != nil {
		return 0, err
	}
	if len(ids) > MaxBulkTriage {
		return 0, fmt.Errorf("%w: at most %d incidents at once", ErrInvalid, MaxBulkTriage)
	}
	now := s.now()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: bulk triage: %w", err)
	}
	defer tx.Rollback()
	for _, id := range ids {
		if err := s.triageTx(ctx, tx, id, u, now, allow); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: bulk triage: commit: %w", err)
	}
	return len(ids), nil
}

// ChoiceWindow is how many of the newest incidents AllChoices counts.
const ChoiceWindow = 20_000

// AllChoices returns, for each of ChoiceColumns, the values it takes among
// the newest ChoiceWindow incidents matching f, the most frequent first,
// at most n a column: one read of the rows instead of a scan per column.
func (s *Store) AllChoices(ctx context.Context, f IncidentFilter, n int) (map[string][]KeyCount, error) {
	where, args := f.where()
	q := "SELECT " + strings.Join(ChoiceColumns, ", ") + " FROM incidents" + where + " ORDER BY at DESC, id DESC LIMIT ?"
	rows, err := s.db.QueryContext(ctx, q, append(args, ChoiceWindow)...)
	if err != nil {
		return nil, fmt.Errorf("store: choices: %w", err)
	}
	defer rows.Close()
	counts := make([]map[string]int64, len(ChoiceColumns))
	for i := range counts {
		counts[i] = map[string]int64{}
	}
	vals := make([]string, len(ChoiceColumns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("store: choices: %w", err)
		}
		for i, v := range vals {
			if v != "" {
				counts[i][v]++
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: choices: %w", err)
	}
	out := map[string][]KeyCount{}
	for i, col := range ChoiceColumns {
		kc := make([]KeyCount, 0, len(counts[i]))
		for k, c := range counts[i] {
			kc = append(kc, KeyCount{Key: k, Count: c})
		}
		slices.SortFunc(kc, func(a, b KeyCount) int {
			if a.Count != b.Count {
				return int(b.Count - a.Count)
			}
			return strings.Compare(a.Key, b.Key)
		})
		out[col] = kc[:min(len(kc), n)]
	}
	return out, nil
}
