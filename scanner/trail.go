package scanner

import (
	"container/list"
	"context"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// A token sent a piece a request (?d=ghp_AbCd, then ?d=EfGh…) is whole in
// no request. The trail keeps, for each sandbox (Request.Source) and host,
// the last pieces each field of its requests carried, and a request's new
// piece of a field is joined with those before it (joiner, fieldjoin.go).

// encJoinedRequests names the layer of a field's pieces joined across
// requests.
const encJoinedRequests = "joined-requests"

const (
	// DefaultTrailEntries is Scanner.TrailEntries' default: sandboxes ×
	// hosts remembered, each at most trailBytes of pieces (16 MiB in all).
	DefaultTrailEntries = 4096
	trailPieces         = 8       // the pieces of one field remembered
	trailBytes          = 4 << 10 // the pieces of one sandbox and host remembered
	trailIdle           = 10 * time.Minute
)

// trail remembers pieces; safe for concurrent use.
type trail struct {
	mu      sync.Mutex // guards entries and lru
	max     int
	entries map[trailKey]*list.Element
	lru     list.List // of *trailEntry, the most recent first
}

type trailKey struct{ source, host string }

type trailEntry struct {
	key    trailKey
	mu     sync.Mutex            // guards the rest: one sandbox's requests to one host
	fields map[fieldKey][]string // by field: its pieces, oldest first
	order  []fieldKey            // fields, in the order they were last sent
	bytes  int
	seen   time.Time
}

// fieldKey names a field of requests: its kind (a byte of fieldWhere),
// its name, and for a path segment its position.
type fieldKey struct {
	kind byte
	name string
	pos  int
}

// fieldWhere is what a finding's location says of a field of each kind.
var fieldWhere = map[byte]string{
	'p': "requests:path", 'q': "requests:query", 'h': "requests:header",
	'c': "requests:cookie", 'f': "requests:form", 'b': "requests:body", 'j': "requests:json",
}

// trailField is a value recorded, for forget.
type trailField struct {
	key   fieldKey
	value string
}

func newTrail(max int) *trail {
	return &trail{max: max, entries: map[trailKey]*list.Element{}}
}

// entry returns k's entry, new when it had none or it was idle too long.
func (t *trail) entry(k trailKey, now time.Time) *trailEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.entries[k]; ok {
		e := el.Value.(*trailEntry)
		e.mu.Lock()
		idle := now.Sub(e.seen) >= trailIdle
		e.mu.Unlock()
		if !idle {
			t.lru.MoveToFront(el)
			return e
		}
		t.lru.Remove(el)
	}
	e := &trailEntry{key: k, fields: map[fieldKey][]string{}, seen: now}
	t.entries[k] = t.lru.PushFront(e)
	for t.lru.Len() > t.max {
		old := t.lru.Remove(t.lru.Back()).(*trailEntry)
		delete(t.entries, old.key)
	}
	return e
}

// note records the values of req's fields (eachTrailField) that differ
// from the last of their field, calls join with each such value and the
// pieces its field held before it (not to be kept), and returns what it
// recorded. The values are recorded before the request is scanned, so
// that a request sent at the same time sees them; forget takes them back
// when the request is refused. A request that sends what it sent before
// allocates nothing here.
func (t *trail) note(k trailKey, req *Request, body []byte, now time.Time, join func(key fieldKey, value string, before []string)) []trailField {
	e := t.entry(k, now)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = now
	var added []trailField
	eachTrailField(req, body, func(key fieldKey, v string) {
		prev := e.fields[key]
		if len(prev) > 0 && prev[len(prev)-1] == v {
			return
		}
		if len(prev) > 0 {
			join(key, v, prev)
		}
		v = strings.Clone(v)
		e.add(key, v)
		added = append(added, trailField{key, v})
	})
	return added
}

// add appends v to field's pieces, within trailPieces and trailBytes.
func (e *trailEntry) add(field fieldKey, v string) {
	ps, ok := e.fields[field]
	if !ok {
		field.name = strings.Clone(field.name) // not the request's memory
		e.bytes += len(field.name)
	}
	if len(ps) == trailPieces {
		e.bytes -= len(ps[0])
		ps = append(ps[:0], ps[1:]...)
	}
	e.fields[field] = append(ps, v)
	e.bytes += len(v)
	if i := slices.Index(e.order, field); i >= 0 {
		e.order = append(e.order[:i], e.order[i+1:]...)
	}
	e.order = append(e.order, field)
	for e.bytes > trailBytes && len(e.order) > 1 {
		oldest := e.order[0]
		e.order = e.order[1:]
		e.bytes -= len(oldest.name)
		for _, p := range e.fields[oldest] {
			e.bytes -= len(p)
		}
		delete(e.fields, oldest)
	}
}

// forget takes back the values note recorded for a request that was
// refused: what did not leave joins nothing.
func (t *trail) forget(k trailKey, fields []trailField) {
	t.mu.Lock()
	el, ok := t.entries[k]
	t.mu.Unlock()
	if !ok || len(fields) == 0 {
		return
	}
	e := el.Value.(*trailEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range fields {
		ps := e.fields[f.key]
		for i := len(ps) - 1; i >= 0; i-- {
			if ps[i] == f.value {
				e.fields[f.key] = append(ps[:i:i], ps[i+1:]...)
				e.bytes -= len(f.value)
				break
			}
		}
	}
}

// eachTrailField calls fn with the pieces of req that the trail follows,
// at most maxFieldPieces: query values by name, path segments by
// position, header values by name, cookies by name, a form's values by
// name, a small JSON body's strings by path, and a short body that is one
// piece.
func eachTrailField(req *Request, body []byte, fn func(fieldKey, string)) {
	n := 0
	add := func(kind byte, name string, pos int, v string) {
		if v != "" && n < maxFieldPieces && fieldPiece(v) {
			n++
			fn(fieldKey{kind, name, pos}, v)
		}
	}
	if u := req.URL; u != nil {
		i := 0
		for p := range strings.SplitSeq(u.Path, "/") {
			add('p', "", i, p)
			i++
		}
		if u.RawQuery != "" {
			for kv := range strings.SplitSeq(u.RawQuery, "&") {
				k, v, _ := strings.Cut(kv, "=")
				add('q', queryUnescape(k), 0, queryUnescape(v))
			}
		}
	}
	for k, vs := range req.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Proxy-Authorization":
		case "Cookie":
			for _, line := range vs {
				for c := range strings.SplitSeq(line, ";") {
					name, v, _ := strings.Cut(strings.TrimSpace(c), "=")
					add('c', name, 0, v)
				}
			}
		default:
			for _, v := range vs {
				add('h', k, 0, v)
			}
		}
	}
	if len(body) == 0 || len(contentEncodings(req.Header)) > 0 {
		return
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch {
	case mt == "application/x-www-form-urlencoded":
		for kv := range strings.SplitSeq(bytesString(body), "&") {
			if n == maxFieldPieces {
				break // a large form is not read to its end
			}
			k, v, _ := strings.Cut(kv, "=")
			add('f', queryUnescape(k), 0, queryUnescape(v))
		}
	case len(body) <= maxTrailJSON && (jsonType(mt) || mt == "" || mt == "text/plain") && json1(body):
		// The strings by path, as the body's scan reads them ("key: value"
		// under an object's key).
		segs, _ := jsonSegments(body, nil, nil)
		for _, g := range segs {
			v := g.text
			if _, mv, ok := objectMember(g); ok {
				v = mv
			}
			add('j', g.where, 0, v)
		}
	case len(body) <= maxFieldPiece:
		add('b', "", 0, strings.TrimSpace(bytesString(body)))
	}
}

// maxTrailJSON is the largest JSON body whose strings the trail follows:
// a webhook's or an API's small call ({"text":"ghp_AbCd"}), not a chat's
// conversation, whose strings are prose.
const maxTrailJSON = 4 << 10

// trailed is what a scan noted in the trail: the segments of its new
// pieces joined with those before them, for each the pieces before (a
// finding that lies in them alone was found, or not, when they were sent),
// and what to take back if the request is refused.
type trailed struct {
	key   trailKey
	segs  []*segment
	prior []string
	added []trailField
}

// trailJoins notes req's pieces in the trail: for each new piece of a
// field that held pieces before, a segment of the spans of those pieces
// and it, joined around a keyword (joiner.spans), ending with it.
func (s *Scanner) trailJoins(req *Request, body []byte) *trailed {
	t := &trailed{key: trailKey{req.Tenant + "\x00" + req.Source, req.Host}}
	t.added = s.trail.note(t.key, req, body, time.Now(), func(key fieldKey, v string, before []string) {
		j := joiner{kw: s.Rules.eng.kw, inToken: s.Rules.eng.inToken, tail: true}
		j.start(fieldWhere[key.kind])
		for _, p := range before {
			j.add(p)
		}
		j.add(v)
		j.end()
		for _, g := range j.segments(nil, false) {
			g.chain = []string{encJoinedRequests}
			t.segs = append(t.segs, g)
			t.prior = append(t.prior, strings.Join(before, ""))
		}
	})
	return t
}

// inspectTrail inspects t's segments, each alone: a finding in the
// pieces sent before alone is left out.
func (s *Scanner) inspectTrail(ctx context.Context, req *Request, t *trailed) ([]Finding, error) {
	var out []Finding
	for i, g := range t.segs {
		found, err := s.inspect(ctx, req, []*segment{g})
		if err != nil {
			return nil, err
		}
		for _, f := range found {
			if f.secret == "" || !strings.Contains(t.prior[i], string(f.secret)) {
				out = append(out, f)
			}
		}
	}
	return out, nil
}
