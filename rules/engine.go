package rules

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/rules/match"
)

// MinTokenLen is the shortest tenant token Compile accepts.
const MinTokenLen = 16

// ErrUnauthenticated is wrapped by every Identify failure. The text is the same whether
// the tenant, the token or the class was wrong, so that it tells a caller nothing.
var ErrUnauthenticated = errors.New("unauthenticated")

// errIdentify is the one error Identify returns.
var errIdentify = fmt.Errorf("rules: identify: %w", ErrUnauthenticated)

// Identity is who a request comes from: a tenant, one of its launch classes and, for a
// run token, the run.
type Identity struct {
	Tenant, Class, Run string
}

// Stage is how much of a request is known when deciding.
type Stage int

const (
	// StageConnect: a CONNECT, only host and port are known.
	StageConnect Stage = iota
	// StageRequest: a plain-HTTP request or a request inside an opened tunnel; method,
	// path and WebSocket upgrade are known.
	StageRequest
)

// String returns "connect" or "request".
func (s Stage) String() string {
	switch s {
	case StageConnect:
		return "connect"
	case StageRequest:
		return "request"
	}
	return "stage(" + strconv.Itoa(int(s)) + ")"
}

// Query is what Decide decides on.
type Query struct {
	Identity Identity
	// Host as the client sent it; Decide normalises it (NormalizeHost).
	Host string
	// Port is the destination port, 1-65535.
	Port int
	// Method and Path (escaped, as on the wire: url.URL.EscapedPath, without the query)
	// are read at StageRequest.
	Method, Path string
	// WebSocket is set for a request that asks for a WebSocket upgrade.
	WebSocket bool
	Stage     Stage
}

// Action is what a Decision lets happen. The zero value is Deny.
type Action int

const (
	// Deny: refuse (403) and record an incident.
	Deny Action = iota
	// Inspect: open the tunnel with the tenant's CA and decide again per request.
	Inspect
	// Passthrough: tunnel blind to the allowed host and port.
	Passthrough
	// Allow: forward this request (after scanning).
	Allow
)

// String returns "deny", "inspect", "passthrough" or "allow".
func (a Action) String() string {
	switch a {
	case Deny:
		return "deny"
	case Inspect:
		return "inspect"
	case Passthrough:
		return "passthrough"
	case Allow:
		return "allow"
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// Reasons for a Deny, sent to clients in the Sluice-Reason header.
const (
	ReasonHostNotAllowed      = "host-not-allowed"
	ReasonPortNotAllowed      = "port-not-allowed"
	ReasonMethodNotAllowed    = "method-not-allowed"
	ReasonPathNotAllowed      = "path-not-allowed"
	ReasonWebSocketNotAllowed = "websocket-not-allowed"
	ReasonBadHost             = "bad-host"
	// ReasonRunEnded: the request names a run that was removed or has expired.
	ReasonRunEnded = "run-ended"
	// ReasonClassNotAllowed: the tenant token named a class outside the tenant's
	// token_classes.
	ReasonClassNotAllowed = "class-not-allowed"
)

// Decision is the engine's verdict on a Query.
type Decision struct {
	Action Action
	// Reason is one of the Reason constants for a Deny, "" otherwise.
	Reason string
	// Entry is the entry that let the query through (the engine's own copy: do not
	// modify); nil for a Deny. Its Origin says where it came from.
	Entry *Entry
	// Tenant is the tenant the query was decided for.
	Tenant string
	// AllowAddresses are Entry's allow_addresses, parsed: the addresses inside the
	// dialer's deny ranges that this decision may reach (the engine's own copy: do not
	// modify). nil: none, as for every Deny. The decision carries them, so that one
	// taken just before a reload still dials what it was decided for.
	AllowAddresses []netip.Prefix
	// PassthroughHost is set on a Deny at StageConnect when a passthrough entry's host
	// matched (its port did not): the client expects the host's real certificate,
	// never one from the tenant CA.
	PassthroughHost bool
	// Review is the class's way of carrying out a refusal (hold, shadow).
	Review Review
}

// Engine is a compiled policy: immutable and safe for concurrent use.
type Engine struct {
	tenants  map[string]*tenant
	upstream map[string]netip.Addr
	// decoy is compared against for unknown tenants, so that they take as long as known
	// ones; it is the hash of random bytes, so no token matches it.
	decoy [sha256.Size]byte
	// runs are the registered runs, shared with the engines that replace this one.
	runs *runTable
	// grants are the tenants' approved access requests (SetGrants), shared like runs.
	grants *grantTable
}

type tenant struct {
	digest  [sha256.Size]byte
	classes map[string]*class
}

type class struct {
	allow, passthrough []*rule
	// review is how the class carries out a refusal (review.go).
	review Review
	// tokenSelects: the tenant token may select the class (Tenant.TokenClasses).
	tokenSelects bool
}

// rule is one compiled entry.
type rule struct {
	entry   *Entry
	host    match.HostPattern
	ports   []int
	methods []string
	paths   []string
	// allow are the entry's allow_addresses, parsed.
	allow []netip.Prefix
}

// defaultPorts are the ports of an entry that names none.
var defaultPorts = []int{443, 80}

// Compile checks p (Check), takes each tenant's token from token (keeping only its
// SHA-256) and compiles the matchers. token returns a tenant's token, trimmed; reading
// it (from a file, the environment) is the caller's business, so that rules does no I/O.
// The engine keeps its own copies: later changes to p do not reach it.
func Compile(p *Policy, token func(tenant string) (string, error)) (*Engine, error) {
	if p == nil || token == nil {
		return nil, errors.New("rules: compile: no policy")
	}
	if ps := problems(p.Check()); len(ps) > 0 {
		return nil, fmt.Errorf("rules: compile: %w", ps.err())
	}
	e := &Engine{
		tenants:  map[string]*tenant{},
		upstream: map[string]netip.Addr{},
		runs:     &runTable{},
		grants:   &grantTable{},
	}
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("rules: compile: %w", err)
	}
	e.decoy = sha256.Sum256(seed[:])
	for h, a := range p.UpstreamHosts {
		n, _ := NormalizeHost(h) // checked
		e.upstream[n], _ = parseAddr(a)
	}
	owner := map[[sha256.Size]byte]string{}
	for _, tn := range slices.Sorted(maps.Keys(p.Tenants)) {
		t := p.Tenants[tn]
		digest, err := tokenDigest(tn, token)
		if err != nil {
			return nil, err
		}
		if other, dup := owner[digest]; dup {
			return nil, fmt.Errorf("rules: tenants %s and %s have the same token; give each its own", other, tn)
		}
		owner[digest] = tn
		ct := &tenant{digest: digest, classes: map[string]*class{}}
		if t != nil {
			for cn, cl := range t.Classes {
				cc := &class{}
				if cl != nil {
					cc.allow = compileEntries(p, cl.Allow)
					cc.passthrough = compileEntries(p, cl.Passthrough)
				}
				cc.review = reviewOf(t, cl)
				cc.tokenSelects = t.tokenSelects(cn)
				ct.classes[cn] = cc
			}
		}
		e.tenants[tn] = ct
	}
	return e, nil
}

// tokenDigest takes a tenant's token and returns its SHA-256. Errors never hold the
// token.
func tokenDigest(name string, token func(string) (string, error)) ([sha256.Size]byte, error) {
	tok, err := token(name)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("rules: tenant %s: %w", name, err)
	}
	tok = strings.TrimSpace(tok)
	switch {
	case tok == "":
		return [sha256.Size]byte{}, fmt.Errorf("rules: tenant %s: empty token", name)
	case len(tok) < MinTokenLen:
		return [sha256.Size]byte{}, fmt.Errorf("rules: tenant %s: token shorter than %d characters", name, MinTokenLen)
	}
	return sha256.Sum256([]byte(tok)), nil
}

// compileEntries compiles a class's validated config entries, expanding presets.
func compileEntries(p *Policy, entries []Entry) []*rule {
	expanded, _ := expandConfigEntries(p, entries)
	return compileRules(expanded)
}

// compileRule compiles one validated entry (no preset) into a rule holding its own copy.
func compileRule(en Entry) *rule {
	c := cloneEntry(en)
	r := &rule{entry: &c, ports: c.Ports, methods: c.Methods}
	r.host, _ = match.ParseHostPattern(en.Host) // validated
	if len(r.ports) == 0 {
		r.ports = defaultPorts
	}
	for _, p := range c.Paths {
		d, _ := match.CleanPath(p) // validated
		r.paths = append(r.paths, d)
	}
	for _, a := range c.AllowAddresses {
		p, _ := parsePrefix(a) // validated
		r.allow = append(r.allow, p)
	}
	// Decisions share the slice: an append to one must not write into it.
	r.allow = slices.Clip(r.allow)
	return r
}

// Identify checks a client's credentials: user is "tenant" or "tenant/class" (class
// DefaultClass when omitted), token the tenant's token or a run token (AddRun). A run
// token gives the run's own class; a class in user must then be the run's. The tenant
// token may name only the tenant's token classes (ErrClassNotForToken). Every other
// failure returns the same error, wrapping ErrUnauthenticated. The token's hash is
// compared in constant time, also for an unknown tenant.
func (e *Engine) Identify(user, token string) (Identity, error) {
	tn, cn, hasClass := strings.Cut(user, "/")
	got := sha256.Sum256([]byte(token))
	if r := e.runs.byToken(got); r != nil {
		t := e.tenants[tn]
		if r.tenant != tn || (hasClass && cn != r.class) || t == nil || t.classes[r.class] == nil {
			return Identity{}, errIdentify
		}
		if r.expired(time.Now) {
			return endedIdentity(Identity{Tenant: r.tenant, Class: r.class, Run: r.id}, tn, cn, hasClass)
		}
		return Identity{Tenant: tn, Class: r.class, Run: r.id}, nil
	}
	if id, ok := e.runs.gone.get(got); ok {
		return endedIdentity(id, tn, cn, hasClass)
	}
	if !hasClass {
		cn = DefaultClass
	}
	t := e.tenants[tn]
	want := e.decoy
	if t != nil {
		want = t.digest
	}
	ok := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	if t == nil || !ok || t.classes[cn] == nil {
		return Identity{}, errIdentify
	}
	if !t.classes[cn].tokenSelects {
		return Identity{Tenant: tn, Class: cn}, errClassNotForToken
	}
	return Identity{Tenant: tn, Class: cn}, nil
}

// Decide decides a query, denying by default. At StageConnect the class's passthrough
// entries are tried first (Passthrough), then its allow entries (Inspect), on host and
// port. At StageRequest an allow entry must match host, port, method, path and, for a
// WebSocket upgrade, allow WebSockets (Allow). A Deny carries the most specific failure
// among the entries whose host matched (port, then method, path, websocket), or
// host-not-allowed when none did.
func (e *Engine) Decide(q Query) Decision {
	d := Decision{Tenant: q.Identity.Tenant}
	t := e.tenants[q.Identity.Tenant]
	var cl *class
	if t != nil {
		cl = t.classes[q.Identity.Class]
	}
	if cl == nil {
		d.Reason = ReasonHostNotAllowed
		return d
	}
	d.Review = cl.review
	var own *class
	if q.Identity.Run != "" {
		r := e.runs.get(q.Identity.Run)
		if r == nil || r.tenant != q.Identity.Tenant || r.class != q.Identity.Class || r.expired(time.Now) {
			d.Reason = ReasonRunEnded
			return d
		}
		own = r.own
	}
	return decideIn(d, q, cl, own, e.grants.classFor(q.Identity.Tenant, q.Identity.Class, q.Identity.Run, time.Now))
}

// decideIn decides q on the entries of cl and then those of own (a run's own entries,
// the tenant's grants; nil ones are skipped), filling in d.
func decideIn(d Decision, q Query, cl *class, own ...*class) Decision {
	host, err := match.NormalizeHost(q.Host)
	if err != nil {
		d.Reason = ReasonBadHost
		return d
	}

	// failure is how far the best host-matching entry got: the higher, the more specific.
	const (
		failNone = iota
		failPort
		failMethod
		failPath
		failWebSocket
	)
	failure := failNone
	note := func(f int) { failure = max(failure, f) }

	switch q.Stage {
	case StageConnect:
		type list struct {
			rules  []*rule
			action Action
		}
		var buf [6]list // no allocation for a class, a run and grants
		lists := append(buf[:0], list{cl.passthrough, Passthrough})
		for _, o := range own {
			if o != nil {
				lists = append(lists, list{o.passthrough, Passthrough})
			}
		}
		lists = append(lists, list{cl.allow, Inspect})
		for _, o := range own {
			if o != nil {
				lists = append(lists, list{o.allow, Inspect})
			}
		}
		for _, list := range lists {
			for _, r := range list.rules {
				if !r.host.Match(host) {
					continue
				}
				if !slices.Contains(r.ports, q.Port) {
					note(failPort)
					d.PassthroughHost = d.PassthroughHost || list.action == Passthrough
					continue
				}
				d.Action, d.Entry, d.AllowAddresses = list.action, r.entry, r.allow
				d.PassthroughHost = false
				return d
			}
		}
	case StageRequest:
		method := strings.ToUpper(q.Method)
		var path string
		var pathErr error
		pathDone := false
		var buf [3][]*rule
		lists := append(buf[:0], cl.allow)
		for _, o := range own {
			if o != nil {
				lists = append(lists, o.allow)
			}
		}
		for _, rules := range lists {
			for _, r := range rules {
				if !r.host.Match(host) {
					continue
				}
				if !slices.Contains(r.ports, q.Port) {
					note(failPort)
					continue
				}
				if len(r.methods) > 0 && !slices.Contains(r.methods, method) {
					note(failMethod)
					continue
				}
				if len(r.paths) > 0 {
					if !pathDone {
						path, pathErr = match.CleanPath(q.Path)
						pathDone = true
					}
					if pathErr != nil || !slices.ContainsFunc(r.paths, func(p string) bool { return match.PathUnder(path, p) }) {
						note(failPath)
						continue
					}
				}
				if q.WebSocket && !r.entry.WebSocket {
					note(failWebSocket)
					continue
				}
				d.Action, d.Entry, d.AllowAddresses = Allow, r.entry, r.allow
				return d
			}
		}
	}
	d.Reason = [...]string{
		failNone:      ReasonHostNotAllowed,
		failPort:      ReasonPortNotAllowed,
		failMethod:    ReasonMethodNotAllowed,
		failPath:      ReasonPathNotAllowed,
		failWebSocket: ReasonWebSocketNotAllowed,
	}[failure]
	return d
}

// UpstreamHosts returns the static resolutions of upstream.hosts, keyed by normalised
// host. The map is a copy.
func (e *Engine) UpstreamHosts() map[string]netip.Addr {
	return maps.Clone(e.upstream)
}

// Tenants returns the tenant names, sorted.
func (e *Engine) Tenants() []string {
	return slices.Sorted(maps.Keys(e.tenants))
}

// Classes returns the tenant's class names, sorted; nil for an unknown tenant.
func (e *Engine) Classes(tenant string) []string {
	t := e.tenants[tenant]
	if t == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(t.classes))
}

// Entries returns copies of the effective entries of a tenant's class, presets expanded,
// for `sluice policy explain`. Both nil for an unknown tenant or class.
func (e *Engine) Entries(tenant, className string) (allow, passthrough []Entry) {
	t := e.tenants[tenant]
	if t == nil || t.classes[className] == nil {
		return nil, nil
	}
	cl := t.classes[className]
	cp := func(rs []*rule) []Entry {
		out := make([]Entry, 0, len(rs))
		for _, r := range rs {
			en := *r.entry
			en.Ports = slices.Clone(en.Ports)
			en.Methods = slices.Clone(en.Methods)
			en.Paths = slices.Clone(en.Paths)
			en.AllowAddresses = slices.Clone(en.AllowAddresses)
			out = append(out, en)
		}
		return out
	}
	return cp(cl.allow), cp(cl.passthrough)
}

// NewToken returns a fresh random token (32 bytes, base64url) for a tenant or run.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("rules: new token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
