// Package phantom mints stand-in credentials for sandboxes and swaps them for
// the real secrets only in requests to the hosts each secret is bound to.
package phantom

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/rules/match"
	"github.com/sluice-egress/sluice/scanner"
)

// Placement says where a credential travels in a request.
type Placement string

// Placements. The zero Placement is Bearer.
const (
	// Bearer: "Authorization: Bearer <secret>" (any scheme but Basic, such as "token").
	Bearer Placement = "bearer"
	// Basic: "Authorization: Basic base64(user:<secret>)", as git over HTTPS sends it.
	Basic Placement = "basic"
	// Header: the named header holds the secret as its whole value.
	Header Placement = "header"
	// Query: the named query parameter holds the secret.
	Query Placement = "query"
)

// DefaultLength is a phantom's length when neither Format nor Length says.
const DefaultLength = 40

// Source yields a real secret. It is read on every use (implementations cache).
type Source interface {
	Secret() (string, error)
}

// Credential is one real secret the sandbox never sees, with where it may go.
type Credential struct {
	// Name identifies the credential within its tenant (lower-case; it names
	// the rule of misuse findings, "phantom-misuse:NAME").
	Name string
	// Secret yields the real value; required for injection.
	Secret Source
	// Hosts are exact hosts or "*.suffix" patterns, matched as the policy matches
	// entry hosts (match.ParseHostPattern); one that does not parse binds nothing.
	Hosts []string
	// Ports the secret may be sent to; empty: 443.
	Ports []int
	// Paths are path prefixes the secret may be sent to, read as the policy reads
	// entry paths (match.CleanPath; a prefix it refuses binds nothing); empty: any.
	Paths []string
	// Placement says where the secret goes; zero: Bearer.
	Placement Placement
	// Header names the header for Placement Header.
	Header string
	// Query names the query parameter for Placement Query.
	Query string
	// User is the user name sent with Placement Basic; "": the client's.
	User string
	// Env are the environment variables that carry the phantom; empty:
	// SLUICE_PHANTOM_<NAME>.
	Env []string
	// Format is a scanner.FakeKinds kind ("github-pat") the phantom is shaped
	// like; "": Prefix followed by random letters and digits up to Length.
	Format string
	// Prefix starts the phantom when Format is empty ("ghp_", "sk-ant-").
	Prefix string
	// Length is the phantom's total length when Format is empty; zero:
	// DefaultLength (or the prefix and 32 characters, if longer).
	Length int
}

// EnvNames are the variables the phantom is exported under.
func (c *Credential) EnvNames() []string {
	if len(c.Env) > 0 {
		return c.Env
	}
	return []string{"SLUICE_PHANTOM_" + strings.ToUpper(strings.ReplaceAll(c.Name, "-", "_"))}
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Check reports what makes the credential unusable.
func (c *Credential) Check() error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("phantom: bad credential name %q", c.Name)
	}
	if c.Secret == nil {
		return fmt.Errorf("phantom: credential %s: no secret source", c.Name)
	}
	if len(c.Hosts) == 0 {
		return fmt.Errorf("phantom: credential %s: bound to no host", c.Name)
	}
	for _, h := range c.Hosts {
		if _, err := match.ParseHostPattern(h); err != nil {
			return fmt.Errorf("phantom: credential %s: %w", c.Name, err)
		}
	}
	switch c.placement() {
	case Bearer, Basic:
	case Header:
		if c.Header == "" {
			return fmt.Errorf("phantom: credential %s: placement header needs a header name", c.Name)
		}
	case Query:
		if c.Query == "" {
			return fmt.Errorf("phantom: credential %s: placement query needs a parameter name", c.Name)
		}
	default:
		return fmt.Errorf("phantom: credential %s: unknown placement %q", c.Name, c.Placement)
	}
	if c.Format != "" {
		if _, err := scanner.FakeSecret(c.Format); err != nil {
			return fmt.Errorf("phantom: credential %s: format: %w", c.Name, err)
		}
	}
	return nil
}

func (c *Credential) placement() Placement {
	if c.Placement == "" {
		return Bearer
	}
	return c.Placement
}

const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// mint returns a fresh phantom value in the credential's shape.
func (c *Credential) mint() (string, error) {
	if c.Format != "" {
		return scanner.FakeSecret(c.Format)
	}
	n := c.Length
	if n == 0 {
		n = max(DefaultLength, len(c.Prefix)+32)
	}
	if n-len(c.Prefix) < 16 {
		return "", fmt.Errorf("phantom: credential %s: length %d leaves fewer than 16 random characters after the prefix", c.Name, n)
	}
	b := make([]byte, n-len(c.Prefix))
	m := big.NewInt(int64(len(alnum)))
	for i := range b {
		v, err := rand.Int(rand.Reader, m)
		if err != nil {
			return "", err
		}
		b[i] = alnum[v.Int64()]
	}
	return c.Prefix + string(b), nil
}

// shapePrefix is the prefix every value of the credential's kind starts
// with: Prefix, or what four fakes of Format have in common.
func (c *Credential) shapePrefix() string {
	if c.Format == "" {
		return c.Prefix
	}
	p, _ := scanner.FakeSecret(c.Format)
	for range 3 {
		o, _ := scanner.FakeSecret(c.Format)
		i := 0
		for i < len(p) && i < len(o) && p[i] == o[i] {
			i++
		}
		p = p[:i]
	}
	return p
}

// Use is a credential as one run (or a tenant, Run "") holds it: the phantom
// in the sandbox's environment, the real secret behind it.
type Use struct {
	Credential *Credential
	Tenant     string
	Run        string
	// Phantom is the value the sandbox holds.
	Phantom string
	// Fingerprint is the phantom's keyed fingerprint (scanner.Fingerprint).
	Fingerprint string

	key   []byte
	shape string
	// hosts are Credential.Hosts parsed, those that parse.
	hosts []match.HostPattern
}

// fingerprint of v with the registry's key.
func (u *Use) fingerprint(v string) string {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte(v))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Where is where the scanner reports the phantom in its bound place: the
// segment and the decoding chain (scanner.Finding's Where and Decoding).
func (u *Use) Where() (where, decoding string) {
	switch u.Credential.placement() {
	case Basic:
		return "header:Authorization", "base64"
	case Header:
		return "header:" + http.CanonicalHeaderKey(u.Credential.Header), ""
	case Query:
		return "url", ""
	}
	return "header:Authorization", ""
}

// InPlace reports whether r carries the phantom in its bound place, once, and
// nowhere else in the part of the request that place belongs to (the header,
// or the URL for a query parameter).
func (u *Use) InPlace(r *http.Request) bool {
	_, ok := u.place(r, u.Phantom)
	return ok
}

// place finds value in the credential's place of r and returns how to write
// another value there.
func (u *Use) place(r *http.Request, value string) (set func(r *http.Request, v string), ok bool) {
	c := u.Credential
	switch c.placement() {
	case Bearer:
		vs := r.Header.Values("Authorization")
		if len(vs) != 1 {
			return nil, false
		}
		scheme, cred, found := strings.Cut(vs[0], " ")
		if !found || strings.EqualFold(scheme, "Basic") || !equal(cred, value) {
			return nil, false
		}
		return func(r *http.Request, v string) { r.Header.Set("Authorization", scheme+" "+v) }, true
	case Basic:
		vs := r.Header.Values("Authorization")
		if len(vs) != 1 {
			return nil, false
		}
		scheme, payload, found := strings.Cut(vs[0], " ")
		if !found || !strings.EqualFold(scheme, "Basic") {
			return nil, false
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
		if err != nil {
			return nil, false
		}
		user, pass, _ := strings.Cut(string(raw), ":")
		switch {
		case equal(pass, value) && !strings.Contains(user, value):
			return func(r *http.Request, v string) {
				if c.User != "" {
					user = c.User
				}
				r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+v)))
			}, true
		case equal(user, value) && !strings.Contains(pass, value):
			// https://TOKEN@host: the token as the user name.
			return func(r *http.Request, v string) {
				r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(v+":"+pass)))
			}, true
		}
		return nil, false
	case Header:
		vs := r.Header.Values(c.Header)
		if len(vs) != 1 || !equal(strings.TrimSpace(vs[0]), value) {
			return nil, false
		}
		return func(r *http.Request, v string) { r.Header.Set(c.Header, v) }, true
	case Query:
		if r.URL == nil || strings.Contains(r.URL.Path, value) || strings.Contains(r.URL.RawPath, value) {
			return nil, false
		}
		parts := strings.Split(r.URL.RawQuery, "&")
		at := -1
		for i, p := range parts {
			k, v, _ := strings.Cut(p, "=")
			dk, err1 := url.QueryUnescape(k)
			dv, err2 := url.QueryUnescape(v)
			if err1 != nil || err2 != nil {
				return nil, false
			}
			switch {
			case dk == c.Query && equal(dv, value) && at < 0:
				at = i
			case strings.Contains(dk, value) || strings.Contains(dv, value) || strings.Contains(p, value):
				return nil, false
			}
		}
		if at < 0 {
			return nil, false
		}
		return func(r *http.Request, v string) {
			ps := strings.Split(r.URL.RawQuery, "&")
			k, _, _ := strings.Cut(ps[at], "=")
			ps[at] = k + "=" + url.QueryEscape(v)
			r.URL.RawQuery = strings.Join(ps, "&")
		}, true
	}
	return nil, false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// Inject replaces the phantom with real in its bound place of r; nothing else
// in r changes. It reports whether the phantom was there.
func (u *Use) Inject(r *http.Request, real string) bool {
	_, ok := u.InjectWire(r, real)
	return ok
}

// InjectWire is Inject, and also returns the spellings of real that r now
// carries besides those a Scrubber derives from real itself, each with the
// spelling of the phantom it replaced: for Basic, the base64 of the
// user:secret pair (padded, then unpadded). Scrubbing them too hands an
// upstream's echo of the Authorization header back as the sandbox sent it.
func (u *Use) InjectWire(r *http.Request, real string) (wire []Swap, ok bool) {
	set, ok := u.place(r, u.Phantom)
	if !ok {
		return nil, false
	}
	_, sent, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	set(r, real)
	if u.Credential.placement() != Basic {
		return nil, true
	}
	_, onWire, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	sent = strings.TrimSpace(sent)
	return []Swap{
		{Real: onWire, Phantom: sent},
		{Real: strings.TrimRight(onWire, "="), Phantom: strings.TrimRight(sent, "=")},
	}, true
}

// Lookalike reports whether r carries, in the credential's place, a value
// that is not the phantom but is the real secret or has its kind's shape
// (the sandbox got hold of a real one). fp is that value's fingerprint.
func (u *Use) Lookalike(r *http.Request, real string) (fp string, ok bool) {
	v := u.placeValue(r)
	if v == "" || equal(v, u.Phantom) {
		return "", false
	}
	if (real != "" && equal(v, real)) || (u.shape != "" && strings.HasPrefix(v, u.shape) && len(v) == len(u.Phantom)) {
		return u.fingerprint(v), true
	}
	return "", false
}

// placeValue is the value in the credential's place, "" when none.
func (u *Use) placeValue(r *http.Request) string {
	c := u.Credential
	switch c.placement() {
	case Bearer:
		scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if ok && !strings.EqualFold(scheme, "Basic") {
			return strings.TrimSpace(cred)
		}
	case Basic:
		scheme, payload, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if ok && strings.EqualFold(scheme, "Basic") {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
			if err == nil {
				user, pass, _ := strings.Cut(string(raw), ":")
				if pass == "" || (u.shape != "" && strings.HasPrefix(user, u.shape)) {
					return user
				}
				return pass
			}
		}
	case Header:
		return strings.TrimSpace(r.Header.Get(c.Header))
	case Query:
		if r.URL != nil {
			return r.URL.Query().Get(c.Query)
		}
	}
	return ""
}

// File reads a secret from a file (trimmed of surrounding white space) and
// reads it again when the file changes, so that rotating the file takes
// effect without a restart.
type File struct {
	// Path of the file.
	Path string
	// CheckEvery bounds how often the file's time and size are looked at;
	// zero: one second.
	CheckEvery time.Duration

	mu      sync.Mutex
	val     string
	mod     time.Time
	size    int64
	checked time.Time
}

// Secret returns the file's content, reread when its time or size changed.
func (f *File) Secret() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	every := f.CheckEvery
	if every <= 0 {
		every = time.Second
	}
	now := time.Now()
	if f.val != "" && now.Sub(f.checked) < every {
		return f.val, nil
	}
	st, err := os.Stat(f.Path)
	if err != nil {
		return "", fmt.Errorf("phantom: secret file: %w", err)
	}
	f.checked = now
	if f.val != "" && st.ModTime().Equal(f.mod) && st.Size() == f.size {
		return f.val, nil
	}
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return "", fmt.Errorf("phantom: secret file: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("phantom: secret file %s is empty", f.Path)
	}
	f.val, f.mod, f.size = v, st.ModTime(), st.Size()
	return v, nil
}

// Env reads a secret from an environment variable.
type Env struct {
	// Name of the variable.
	Name string
}

// ErrEmpty is returned by Env when the variable is unset or empty.
var ErrEmpty = errors.New("phantom: secret is empty")

// Secret returns the variable's value.
func (e Env) Secret() (string, error) {
	v := strings.TrimSpace(os.Getenv(e.Name))
	if v == "" {
		return "", fmt.Errorf("%w: environment variable %s", ErrEmpty, e.Name)
	}
	return v, nil
}
