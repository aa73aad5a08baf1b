package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// DefaultSessionTTL is a login session's lifetime when none is configured.
const DefaultSessionTTL = 12 * time.Hour

// Cookie names.
const (
	SessionCookie = "sluice_session"
	// loginCSRFCookie carries the login form's CSRF token before any session.
	loginCSRFCookie = "sluice_login_csrf"
)

// maxSessions bounds the session table; a login beyond it evicts expired
// sessions first, then refuses.
const maxSessions = 10000

// Session is one logged-in browser.
type Session struct {
	Principal Principal
	// CSRF is the token every form and unsafe script call must carry.
	CSRF    string
	Expires time.Time
}

// CheckCSRF compares a submitted token with the session's in constant time.
func (s *Session) CheckCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRF)) == 1
}

// Sessions holds the login sessions in memory, keyed by a hash of the
// cookie value (a restart logs everybody out).
type Sessions struct {
	// TTL zero: DefaultSessionTTL.
	TTL time.Duration
	// Now nil: time.Now.
	Now func() time.Time

	mu sync.Mutex
	m  map[[32]byte]*Session
}

func (ss *Sessions) now() time.Time {
	if ss.Now == nil {
		return time.Now()
	}
	return ss.Now()
}

func (ss *Sessions) ttl() time.Duration {
	if ss.TTL <= 0 {
		return DefaultSessionTTL
	}
	return ss.TTL
}

func randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("dashboard: random: %w", err)
	}
	return b, nil
}

func randomToken() (string, error) {
	b, err := randomBytes(32)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Create starts a session for p and sets its cookie on w: HttpOnly,
// SameSite=Strict, Secure when the request came over TLS.
func (ss *Sessions) Create(w http.ResponseWriter, r *http.Request, p Principal) (*Session, error) {
	id, err := randomToken()
	if err != nil {
		return nil, err
	}
	csrf, err := randomToken()
	if err != nil {
		return nil, err
	}
	now := ss.now()
	s := &Session{Principal: p, CSRF: csrf, Expires: now.Add(ss.ttl())}
	ss.mu.Lock()
	if ss.m == nil {
		ss.m = map[[32]byte]*Session{}
	}
	if len(ss.m) >= maxSessions {
		for k, v := range ss.m {
			if !now.Before(v.Expires) {
				delete(ss.m, k)
			}
		}
	}
	full := len(ss.m) >= maxSessions
	if !full {
		ss.m[sha256.Sum256([]byte(id))] = s
	}
	ss.mu.Unlock()
	if full {
		return nil, fmt.Errorf("dashboard: too many sessions")
	}
	setCookie(w, r, SessionCookie, id, ss.ttl())
	return s, nil
}

// setCookie sets an HttpOnly, SameSite=Strict cookie (Secure over TLS); an
// empty value deletes it, a zero maxAge makes it last the browser session.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	c := &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     "/",
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	}
	switch {
	case value == "":
		c.MaxAge = -1 // delete
	case maxAge > 0:
		c.MaxAge = int(maxAge.Seconds())
	}
	http.SetCookie(w, c)
}

// FromRequest returns the request's live session, or nil.
func (ss *Sessions) FromRequest(r *http.Request) *Session {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	k := sha256.Sum256([]byte(c.Value))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[k]
	if s == nil {
		return nil
	}
	if !ss.now().Before(s.Expires) {
		delete(ss.m, k)
		return nil
	}
	return s
}

// Destroy ends the request's session and clears its cookie.
func (ss *Sessions) Destroy(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		ss.mu.Lock()
		delete(ss.m, sha256.Sum256([]byte(c.Value)))
		ss.mu.Unlock()
	}
	setCookie(w, r, SessionCookie, "", 0)
}

type sessionKey struct{}

func withSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// sessionFrom returns the page request's session (for its CSRF token).
func sessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
