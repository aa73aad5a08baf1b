package dashboard

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-egress/sluice/rules"
)

// Role is what a principal may do. Staff roles are ordered viewer <
// reviewer < admin; RoleTenant stands apart and sees only its own tenant.
type Role string

// Roles.
const (
	// RoleViewer reads everything.
	RoleViewer Role = "viewer"
	// RoleReviewer also triages incidents and decides access requests.
	RoleReviewer Role = "reviewer"
	// RoleAdmin may do everything.
	RoleAdmin Role = "admin"
	// RoleTenant is a tenant token on the API: its own tenant's things only.
	RoleTenant Role = "tenant"
)

// rank orders the staff roles; 0 for the tenant role and anything unknown.
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleReviewer:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool { return r.rank() > 0 || r == RoleTenant }

// Principal is who makes a request.
type Principal struct {
	// Name is the user name, or "tenant:<name>" for a tenant token.
	Name string
	Role Role
	// Tenant is set for RoleTenant and for a tenant-scoped user: either
	// sees that tenant's incidents, runs and requests only.
	Tenant string
}

// SeesTenant reports whether p may see tenant's incidents, runs, policy
// and requests: staff roles see every tenant, a tenant principal only its
// own, and so does a tenant-scoped staff user.
func (p Principal) SeesTenant(tenant string) bool {
	if p.Tenant != "" {
		return (p.Role == RoleTenant || p.Role.rank() > 0) && p.Tenant == tenant
	}
	return p.Role.rank() > 0
}

// AtLeast reports whether p holds role r or a higher staff role (viewer <
// reviewer < admin). A tenant principal holds no staff role;
// AtLeast(RoleTenant) is true for a tenant principal only.
func (p Principal) AtLeast(r Role) bool {
	if r == RoleTenant {
		return p.Role == RoleTenant && p.Tenant != ""
	}
	return r.rank() > 0 && p.Role.rank() >= r.rank()
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p (Middleware does this; tests may too).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the authenticated principal of a request's context.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// User is a dashboard user from the config, with its password hash loaded.
type User struct {
	Name string
	// Role is RoleViewer, RoleReviewer or RoleAdmin.
	Role Role
	// Tenant, when set, scopes the user to that tenant: its role applies to
	// that tenant's incidents, runs and requests only, and others are not found.
	Tenant string
	// Hash is a bcrypt hash ("$2a$…", "$2b$…", "$2y$…") or an argon2id PHC
	// string ("$argon2id$v=19$m=…,t=…,p=…$salt$hash").
	Hash string
}

// decoyHash is checked against when the user is unknown and no user is
// configured.
var decoyHash = sync.OnceValue(func() string {
	h, err := bcrypt.GenerateFromPassword([]byte("decoy"), bcrypt.DefaultCost)
	if err != nil {
		panic(err)
	}
	return string(h)
})

// Auth authenticates every page and API request. Build it with newAuth.
type Auth struct {
	// Users are the config users.
	Users []User
	// Identify checks tenant tokens (Options.Identify); nil refuses them.
	Identify func(user, token string) (rules.Identity, error)
	// Sessions holds login sessions.
	Sessions *Sessions
	// Limiter throttles failed logins by IP and by user.
	Limiter *Limiter
	// Logger nil: slog.Default().
	Logger *slog.Logger

	basicOK sync.Map // sha256(user \x00 password) -> time.Time: recent good Basic logins
	now     func() time.Time
}

func newAuth(o Options) *Auth {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Auth{
		Users:    o.Users,
		Identify: o.Identify,
		Sessions: &Sessions{TTL: o.SessionTTL, Now: now},
		Limiter:  &Limiter{Now: now},
		Logger:   o.logger(),
		now:      now,
	}
}

// errThrottled: too many failed attempts from this IP or for this user.
var errThrottled = errors.New("too many failed attempts; wait and retry")

// clientIP is the peer address: no X-Forwarded-For, which a client can forge.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Login checks a user's password, throttled per IP and per user name.
func (a *Auth) Login(r *http.Request, name, password string) (Principal, error) {
	ip := clientIP(r)
	if !a.Limiter.Allow("ip:"+ip) || !a.Limiter.Allow("user:"+name) {
		return Principal{}, errThrottled
	}
	var found *User
	for i := range a.Users {
		if subtle.ConstantTimeCompare([]byte(a.Users[i].Name), []byte(name)) == 1 {
			found = &a.Users[i]
		}
	}
	// An unknown name is checked against a configured hash (same algorithm
	// and cost as a real login, so timing does not tell names apart).
	h := decoyHash()
	if len(a.Users) > 0 {
		h = a.Users[0].Hash
	}
	if found != nil {
		h = found.Hash
	}
	if !CheckPassword(h, password) || found == nil || !found.Role.Valid() || found.Role == RoleTenant {
		a.Limiter.Fail("ip:" + ip)
		a.Limiter.Fail("user:" + name)
		a.logger().Warn("dashboard: login failed", "user", name, "client", ip)
		return Principal{}, errors.New("wrong user name or password")
	}
	a.Limiter.Reset("user:" + name)
	return Principal{Name: found.Name, Role: found.Role, Tenant: found.Tenant}, nil
}

func (a *Auth) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

// basicCacheTTL is how long a verified Basic login skips the (deliberately
// slow) password hash: API clients send it on every call.
const basicCacheTTL = time.Minute

func (a *Auth) basic(r *http.Request, name, password string) (Principal, error) {
	k := sha256.Sum256([]byte(name + "\x00" + password))
	if v, ok := a.basicOK.Load(k); ok && a.now().Before(v.(time.Time)) {
		for _, u := range a.Users {
			if u.Name == name {
				return Principal{Name: u.Name, Role: u.Role, Tenant: u.Tenant}, nil
			}
		}
	}
	p, err := a.Login(r, name, password)
	if err != nil {
		return p, err
	}
	a.basicOK.Store(k, a.now().Add(basicCacheTTL))
	return p, nil
}

func (a *Auth) bearer(r *http.Request, cred string) (Principal, error) {
	ip := clientIP(r)
	if !a.Limiter.Allow("ip:" + ip) {
		return Principal{}, errThrottled
	}
	user, token, ok := strings.Cut(cred, ":")
	if a.Identify == nil || !ok || user == "" || token == "" {
		a.Limiter.Fail("ip:" + ip)
		return Principal{}, errors.New("bad tenant token")
	}
	id, err := a.Identify(user, token)
	if errors.Is(err, rules.ErrClassNotForToken) {
		// The tenant token is right; which classes it may pick matters on the proxy only.
		err = nil
	}
	if err != nil || id.Tenant == "" || id.Run != "" {
		a.Limiter.Fail("ip:" + ip)
		a.logger().Warn("dashboard: tenant token refused", "client", ip)
		return Principal{}, errors.New("bad tenant token")
	}
	return Principal{Name: "tenant:" + id.Tenant, Role: RoleTenant, Tenant: id.Tenant}, nil
}

// isAPI reports whether the request is for the JSON API.
func isAPI(r *http.Request) bool {
	return r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/")
}

// CSRFHeader carries the session's CSRF token on unsafe API calls made
// with the session cookie (by the pages' own script).
const CSRFHeader = "X-CSRF-Token"

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// Middleware authenticates a request and puts its Principal in the
// context. Pages: the session cookie, else a redirect to /login (303), and
// unsafe methods must carry the session's CSRF token (form field "csrf").
// API (/api/…): HTTP Basic with a config user, `Authorization: Bearer
// <tenant>:<token>` with a tenant token, or the session cookie (unsafe
// methods then need the CSRFHeader); else 401.
func (a *Auth) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isAPI(r) {
			a.api(next, w, r)
			return
		}
		s := a.Sessions.FromRequest(r)
		if s == nil {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				http.Error(w, "session expired: log in again", http.StatusForbidden)
				return
			}
			http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if !safeMethod(r.Method) && !s.CheckCSRF(r.PostFormValue("csrf")) {
			http.Error(w, "bad or missing CSRF token: reload the page", http.StatusForbidden)
			return
		}
		ctx := withSession(WithPrincipal(r.Context(), s.Principal), s)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (a *Auth) api(next http.Handler, w http.ResponseWriter, r *http.Request) {
	var (
		p   Principal
		err error
	)
	authz := r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(authz, " ")
	switch {
	case strings.EqualFold(scheme, "Basic"):
		name, password, ok := r.BasicAuth()
		if !ok {
			err = errors.New("malformed Basic credentials")
			break
		}
		p, err = a.basic(r, name, password)
	case strings.EqualFold(scheme, "Bearer"):
		p, err = a.bearer(r, strings.TrimSpace(cred))
	case authz != "":
		err = errors.New("unsupported Authorization scheme (use Basic or Bearer)")
	default:
		s := a.Sessions.FromRequest(r)
		if s == nil {
			err = errors.New("authentication required")
			break
		}
		if !safeMethod(r.Method) && !s.CheckCSRF(r.Header.Get(CSRFHeader)) {
			apiError(w, http.StatusForbidden, "missing or bad "+CSRFHeader+" header")
			return
		}
		p = s.Principal
	}
	if err != nil {
		code := http.StatusUnauthorized
		if errors.Is(err, errThrottled) {
			code = http.StatusTooManyRequests
			w.Header().Set("Retry-After", strconv.Itoa(int(a.Limiter.window().Seconds())))
		} else {
			w.Header().Set("WWW-Authenticate", `Basic realm="sluice", charset="UTF-8"`)
		}
		apiError(w, code, err.Error())
		return
	}
	next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
}

// apiError writes {"error": msg}.
func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, "{\"error\":%s}\n", strconv.Quote(msg))
}

// Limiter counts failed attempts per key (an IP, a user name) in a fixed
// window; past Max failures the key is refused until the window ends.
type Limiter struct {
	// Max failures per key and window; zero: 10.
	Max int
	// Window zero: 5 minutes.
	Window time.Duration
	// Now nil: time.Now.
	Now func() time.Time

	mu   sync.Mutex
	keys map[string]*limit
}

type limit struct {
	n     int
	start time.Time
}

func (l *Limiter) window() time.Duration {
	if l.Window <= 0 {
		return 5 * time.Minute
	}
	return l.Window
}

func (l *Limiter) max() int {
	if l.Max <= 0 {
		return 10
	}
	return l.Max
}

func (l *Limiter) clock() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}

// maxLimiterKeys bounds the table: beyond it, expired keys are dropped.
const maxLimiterKeys = 10000

func (l *Limiter) get(key string, create bool) *limit {
	now := l.clock()
	if l.keys == nil {
		l.keys = map[string]*limit{}
	}
	e := l.keys[key]
	if e != nil && now.Sub(e.start) >= l.window() {
		delete(l.keys, key)
		e = nil
	}
	if e == nil && create {
		if len(l.keys) >= maxLimiterKeys {
			for k, v := range l.keys {
				if now.Sub(v.start) >= l.window() {
					delete(l.keys, k)
				}
			}
		}
		e = &limit{start: now}
		l.keys[key] = e
	}
	return e
}

// Allow reports whether key may try again.
func (l *Limiter) Allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.get(key, false)
	return e == nil || e.n < l.max()
}

// Fail counts a failed attempt for key.
func (l *Limiter) Fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.get(key, true).n++
}

// Reset forgets key's failures (after a success).
func (l *Limiter) Reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, key)
}
