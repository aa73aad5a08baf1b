package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/sluice-egress/sluice/rules"
)

// ErrLimited: the run (or tenant) filed more access requests than it may for
// now; it may file again later.
var ErrLimited = errors.New("too many access requests; wait before filing more")

// Scopes of a grant, as the store spells them.
const (
	ScopeRun    = "run"
	ScopeClass  = "class"
	ScopeTenant = "tenant"
)

// Limits of sandbox filings.
const (
	// MaxReason bounds a filing's reason (bytes).
	MaxReason = MaxJustification
	// MaxPendingPerTenant bounds a tenant's queue: past it, filings wait.
	MaxPendingPerTenant = 200
	// FilingTTL is how long a filed request waits for a decision.
	FilingTTL = 24 * time.Hour
	// permanent is what "permanent" means for a grant's expiry.
	permanent = 100 * 365 * 24 * time.Hour
)

// ReviewStore keeps what filing, holding and scoped approvals need besides
// Store (which creates the requests): the store package's methods of the
// same names.
type ReviewStore interface {
	GetAccessRequest(ctx context.Context, id string) (AccessRequest, error)
	SetAccessContext(ctx context.Context, c AccessContext) error
	GetAccessContext(ctx context.Context, id string) (AccessContext, error)
	AccessContexts(ctx context.Context, ids []string) (map[string]AccessContext, error)
	JoinAccessRequest(ctx context.Context, id string, held bool) error
	FindPendingAccess(ctx context.Context, tenant, run string, want AccessRequest) (AccessRequest, bool, error)
	CountPendingAccess(ctx context.Context, tenant string) (int, error)
	ScopeAccessRequest(ctx context.Context, id string, sc AccessScope) error
}

// AccessContext is an access request's run, class, refusal, granted scope,
// and how many filings and held connections it stands for.
type AccessContext struct {
	ID, Run, Class, Incident string
	Scope                    string
	Joined, Held             int
}

// AccessScope is what an approval grants (the store's form).
type AccessScope struct {
	Ports     []int
	Methods   []string
	Paths     []string
	ExpiresAt time.Time
	Scope     string
}

// Filing is an access request filed from inside a sandbox, as the identity
// of its proxy credentials.
type Filing struct {
	Tenant, Class, Run string
	Host               string
	Ports              []int
	Methods, Paths     []string
	// Reason is the agent's free text (required unless Held).
	Reason string
	// Incident is the refusal the request answers, if known.
	Incident string
	// Held: filed for a connection the gateway holds open.
	Held bool
}

// Filed is a filed request with its context.
type Filed struct {
	Request AccessRequest
	Context AccessContext
	// Joined: the filing joined a pending request for the same thing.
	Joined bool
}

// reviewState is the service's filing limiter and the holds waiting for a
// decision.
type reviewState struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	waiters map[string][]chan struct{} // by request id
}

type bucket struct {
	tokens float64
	at     time.Time
}

// take takes one filing from key's bucket: burst at most, refilled one every
// every.
func (rs *reviewState) take(key string, burst int, every time.Duration, now time.Time) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.buckets == nil {
		rs.buckets = map[string]*bucket{}
	}
	b := rs.buckets[key]
	if b == nil {
		if len(rs.buckets) >= 10000 {
			for k, old := range rs.buckets { // forget the full ones: they are the default
				if old.tokens+now.Sub(old.at).Seconds()/every.Seconds() >= float64(burst) {
					delete(rs.buckets, k)
				}
			}
		}
		b = &bucket{tokens: float64(burst), at: now}
		rs.buckets[key] = b
	}
	b.tokens = min(float64(burst), b.tokens+now.Sub(b.at).Seconds()/every.Seconds())
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (m *Service) filingLimits() (int, time.Duration) {
	burst, every := m.FilingBurst, m.FilingEvery
	if burst <= 0 {
		burst = 5
	}
	if every <= 0 {
		every = time.Minute
	}
	return burst, every
}

// FileAccess files an access request from a sandbox: for exactly what it
// names, as its own run (a filing cannot name another run or tenant). A
// filing for the same thing as a pending request of the same run joins it;
// a new one takes one of the run's filings (ErrLimited when none is left,
// or when the tenant's queue is full). Invalid input wraps ErrInvalid.
func (m *Service) FileAccess(ctx context.Context, f Filing) (Filed, error) {
	if m.Review == nil {
		return Filed{}, errors.New("runs: this server takes no access requests from sandboxes")
	}
	x, err := m.filingRequest(f, time.Now())
	if err != nil {
		return Filed{}, err
	}
	if old, ok, err := m.Review.FindPendingAccess(ctx, f.Tenant, f.Run, x); err != nil {
		return Filed{}, err
	} else if ok {
		if err := m.Review.JoinAccessRequest(ctx, old.ID, f.Held); err != nil {
			return Filed{}, err
		}
		c, err := m.Review.GetAccessContext(ctx, old.ID)
		if err != nil {
			return Filed{}, err
		}
		m.notifyFiled(old, c)
		return Filed{Request: old, Context: c, Joined: true}, nil
	}
	key := "run:" + f.Run
	if f.Run == "" {
		key = "tenant:" + f.Tenant
	}
	burst, every := m.filingLimits()
	if !m.review.take(key, burst, every, time.Now()) {
		return Filed{}, ErrLimited
	}
	if n, err := m.Review.CountPendingAccess(ctx, f.Tenant); err != nil {
		return Filed{}, err
	} else if n >= MaxPendingPerTenant {
		return Filed{}, ErrLimited
	}
	x, err = m.Store.CreateAccessRequest(ctx, x)
	if err != nil {
		return Filed{}, err
	}
	c := AccessContext{ID: x.ID, Run: f.Run, Class: f.Class, Incident: f.Incident, Scope: ScopeTenant, Joined: 1}
	if f.Run != "" {
		c.Scope = ScopeRun
	}
	if f.Held {
		c.Held = 1
	}
	if err := m.Review.SetAccessContext(ctx, c); err != nil {
		return Filed{}, err
	}
	actor := "tenant:" + f.Tenant
	if f.Run != "" {
		actor = "run:" + f.Run
	}
	m.audit(ctx, actor, "access.requested", x.Tenant, x.ID, x.Host)
	m.logger().Info("access request filed", "request", x.ID, "tenant", x.Tenant, "run", f.Run, "host", x.Host, "held", f.Held)
	m.notifyFiled(x, c)
	return Filed{Request: x, Context: c}, nil
}

// filingRequest checks a filing and turns it into a pending request, with
// the checks RequestAccess makes (a known tenant, a grantable entry).
func (m *Service) filingRequest(f Filing, now time.Time) (AccessRequest, error) {
	reason := cleanReason(f.Reason)
	switch {
	case f.Tenant == "":
		return AccessRequest{}, fmt.Errorf("%w: a filing needs a tenant", ErrInvalid)
	case reason == "" && !f.Held:
		return AccessRequest{}, fmt.Errorf("%w: say why in reason (at most %d bytes)", ErrInvalid, MaxReason)
	case len(reason) > MaxReason:
		return AccessRequest{}, fmt.Errorf("%w: reason is over %d bytes", ErrInvalid, MaxReason)
	}
	if reason == "" {
		reason = "held by the gateway while a reviewer decides"
	}
	methods := make([]string, len(f.Methods))
	for i, m := range f.Methods {
		methods[i] = strings.ToUpper(strings.TrimSpace(m))
	}
	if len(f.Methods) == 0 {
		methods = nil
	}
	return m.accessRequest(AccessInput{Tenant: f.Tenant, Host: f.Host, Ports: f.Ports, Methods: methods, Paths: f.Paths,
		Justification: reason, ExpiresAt: now.Add(FilingTTL), Filed: now})
}

// cleanReason trims a reason and drops control characters but newlines and
// tabs: it is free text that a reviewer reads.
func cleanReason(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, s)
	return strings.TrimSpace(s)
}

// AwaitAccess files (or joins) a request for a held connection and waits
// until it is decided or ctx ends (the hold's timeout, the client going,
// the run ending). It returns the request as it stands then; ctx's error
// when it ended first.
func (m *Service) AwaitAccess(ctx context.Context, f Filing) (AccessRequest, error) {
	f.Held = true
	filed, err := m.FileAccess(ctx, f)
	if err != nil {
		return AccessRequest{}, err
	}
	id := filed.Request.ID
	ch := make(chan struct{})
	m.review.mu.Lock()
	if m.review.waiters == nil {
		m.review.waiters = map[string][]chan struct{}{}
	}
	m.review.waiters[id] = append(m.review.waiters[id], ch)
	m.review.mu.Unlock()
	defer m.forgetWaiter(id, ch)
	// A decision taken elsewhere (another replica, the CLI on the store) is
	// seen by polling; one taken here wakes the waiter at once.
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return filed.Request, ctx.Err()
		case <-ch:
		case <-poll.C:
		}
		x, err := m.Review.GetAccessRequest(context.WithoutCancel(ctx), id)
		if err != nil {
			return filed.Request, err
		}
		if x.State != "pending" {
			if x.State == "approved" {
				if err := m.RefreshGrants(context.WithoutCancel(ctx)); err != nil {
					m.logger().Error("grants not refreshed for a held connection", "request", id, "err", err)
				}
			}
			return x, nil
		}
	}
}

func (m *Service) forgetWaiter(id string, ch chan struct{}) {
	m.review.mu.Lock()
	defer m.review.mu.Unlock()
	ws := m.review.waiters[id]
	for i, c := range ws {
		if c == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(m.review.waiters, id)
	} else {
		m.review.waiters[id] = ws
	}
}

// wake tells the holds waiting on a request that it was decided.
func (m *Service) wakeHeld(id string) {
	m.review.mu.Lock()
	ws := m.review.waiters[id]
	delete(m.review.waiters, id)
	m.review.mu.Unlock()
	for _, c := range ws {
		close(c)
	}
}

func (m *Service) notifyFiled(x AccessRequest, c AccessContext) {
	if m.OnAccess != nil {
		m.OnAccess(x, c)
	}
}

// Scope is what a reviewer approves: the request narrowed (exactly its
// host and port; with methods and path prefixes), for how long, and for
// whom.
type Scope struct {
	// Ports, Methods and Paths replace the request's; nil keeps them.
	Ports   []int
	Methods []string
	Paths   []string
	// TTL: the grant's life from now; zero keeps the request's expiry.
	// Permanent (class or tenant scope only) grants without a practical end.
	TTL       time.Duration
	Permanent bool
	// Scope is ScopeRun (the filing run only), ScopeClass or ScopeTenant;
	// "" keeps the request's.
	Scope string
}

// ApproveScoped approves a pending request with a reviewer's scope: the
// store's request is narrowed first, then approved (DecideAccess), so the
// grant is exactly what the reviewer chose.
func (m *Service) ApproveScoped(ctx context.Context, d Decision, sc Scope) (AccessRequest, error) {
	if m.Review == nil {
		return AccessRequest{}, errors.New("runs: this server keeps no access scopes")
	}
	x, err := m.Review.GetAccessRequest(ctx, d.ID)
	if err != nil {
		return x, err
	}
	c, err := m.Review.GetAccessContext(ctx, d.ID)
	if err != nil {
		return x, err
	}
	as := AccessScope{Ports: x.Ports, Methods: x.Methods, Paths: x.Paths, ExpiresAt: x.ExpiresAt, Scope: c.Scope}
	if sc.Ports != nil {
		as.Ports = sc.Ports
	}
	if sc.Methods != nil {
		as.Methods = sc.Methods
	}
	if sc.Paths != nil {
		as.Paths = sc.Paths
	}
	if sc.Scope != "" {
		as.Scope = sc.Scope
	}
	switch {
	case as.Scope != "" && as.Scope != ScopeRun && as.Scope != ScopeClass && as.Scope != ScopeTenant:
		return x, fmt.Errorf("%w: scope %q (want run, class or tenant)", ErrInvalid, as.Scope)
	case as.Scope == ScopeRun && c.Run == "":
		return x, fmt.Errorf("%w: the request was not filed by a run: grant it for the class or tenant", ErrInvalid)
	case as.Scope == ScopeClass && c.Class == "":
		return x, fmt.Errorf("%w: the request names no class: grant it for the tenant", ErrInvalid)
	case sc.Permanent && as.Scope == ScopeRun:
		return x, fmt.Errorf("%w: a run-scoped grant ends with its run; permanent is for a class or tenant", ErrInvalid)
	case sc.TTL < 0:
		return x, fmt.Errorf("%w: ttl must be positive", ErrInvalid)
	}
	if sc.Permanent {
		as.ExpiresAt = time.Now().Add(permanent)
	} else if sc.TTL > 0 {
		as.ExpiresAt = time.Now().Add(sc.TTL)
	}
	check := x
	check.Ports, check.Methods, check.Paths = as.Ports, as.Methods, as.Paths
	if err := rules.CheckGrant(GrantOf(check)); err != nil {
		return x, fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), "rules: "))
	}
	if err := m.Review.ScopeAccessRequest(ctx, d.ID, as); err != nil {
		return x, err
	}
	d.Approve = true
	return m.DecideAccess(ctx, d)
}

// grantScoped is the grant of an approved request in its scope.
func grantScoped(x AccessRequest, c AccessContext, ok bool) rules.Grant {
	g := GrantOf(x)
	if !ok {
		return g
	}
	switch c.Scope {
	case ScopeRun:
		g.Run, g.Class = c.Run, c.Class
		if c.Run == "" {
			g.Run = "!" // no run to scope to: a bad run id, so the grant opens nothing
		}
	case ScopeClass:
		g.Class = c.Class
	}
	return g
}
