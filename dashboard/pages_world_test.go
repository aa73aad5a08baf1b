package dashboard

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// pageWorld is a dashboard on a real listener with a fresh store, a
// compiled policy and three users (password "correct horse" for each).
type pageWorld struct {
	t      testing.TB
	srv    *httptest.Server
	store  *store.Store
	engine *rules.Engine
	opts   Options
	// tenantTokens by tenant.
	tenantTokens map[string]string
}

const worldPassword = "correct horse"

const worldPolicy = `
tenants:
  acme:
    token_env: DASH_TEST_ACME_TOKEN
    classes:
      agent:
        allow:
          - host: api.github.test
          - host: "*.pkg.example.test"
            methods: [GET]
        passthrough:
          - host: pinned.example.test
      validation: {}
  globex:
    token_env: DASH_TEST_GLOBEX_TOKEN
    classes:
      agent:
        allow:
          - host: globex-only.example.test
`

// mustHash is a cheap bcrypt hash for tests.
func mustHash(tb testing.TB, pw string) string {
	tb.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		tb.Fatal(err)
	}
	return string(h)
}

func mustPageWorld(tb testing.TB, tweak ...func(*Options)) *pageWorld {
	tb.Helper()
	w := &pageWorld{t: tb, tenantTokens: map[string]string{"acme": "acme-token-0123456789", "globex": "globex-token-0123456789"}}
	if t, ok := tb.(*testing.T); ok {
		t.Setenv("DASH_TEST_ACME_TOKEN", w.tenantTokens["acme"])
		t.Setenv("DASH_TEST_GLOBEX_TOKEN", w.tenantTokens["globex"])
	}
	cfg, err := config.Parse([]byte(worldPolicy), "sluice.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	if w.engine, err = rules.Compile(cfg.Policy(), cfg.Token); err != nil {
		tb.Fatal(err)
	}
	w.store, err = store.Open(context.Background(), filepath.Join(tb.TempDir(), store.FileName))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.store.Close() })
	w.opts = Options{
		Store:  w.store,
		Engine: func() *rules.Engine { return w.engine },
		Users: []User{
			{Name: "vera", Role: RoleViewer, Hash: mustHash(tb, worldPassword)},
			{Name: "rex", Role: RoleReviewer, Hash: mustHash(tb, worldPassword)},
			{Name: "ada", Role: RoleAdmin, Hash: mustHash(tb, worldPassword)},
		},
		Identify: w.engine.Identify,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Runs:     &runs.Service{Store: runstore.New(w.store), Engine: func() *rules.Engine { return w.engine }},
	}
	for _, f := range tweak {
		f(&w.opts)
	}
	w.srv = httptest.NewServer(NewRouter(w.opts))
	tb.Cleanup(w.srv.Close)
	return w
}

// client is a browser-like client: a cookie jar, no redirects followed.
type client struct {
	w   *pageWorld
	hc  *http.Client
	jar *cookiejar.Jar
}

func (w *pageWorld) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{w: w, jar: jar, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type resp struct {
	code int
	body string
	hdr  http.Header
}

func (c *client) do(method, path string, form url.Values, hdr ...string) resp {
	c.w.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.w.srv.URL+path, body)
	if err != nil {
		c.w.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.hc.Do(req)
	if err != nil {
		c.w.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{code: res.StatusCode, body: string(b), hdr: res.Header}
}

func (c *client) get(path string) resp { return c.do("GET", path, nil) }

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the first CSRF token on a page.
func csrfOf(tb testing.TB, page string) string {
	tb.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		tb.Fatalf("no CSRF token on the page:\n%s", page)
	}
	return m[1]
}

// login logs the client in and returns the session's CSRF token.
func (c *client) login(user, password string) resp {
	c.w.t.Helper()
	page := c.get("/login")
	tok := csrfOf(c.w.t, page.body)
	return c.do("POST", "/login", url.Values{"csrf": {tok}, "user": {user}, "password": {password}, "next": {"/incidents"}})
}

func (c *client) mustLogin(user string) string {
	c.w.t.Helper()
	r := c.login(user, worldPassword)
	if r.code != http.StatusSeeOther || r.hdr.Get("Location") != "/incidents" {
		c.w.t.Fatalf("login %s: %d %s %s", user, r.code, r.hdr.Get("Location"), r.body)
	}
	return csrfOf(c.w.t, c.get("/").body)
}

func (w *pageWorld) insert(ins ...incident.Incident) {
	w.t.Helper()
	if err := w.store.InsertIncidents(context.Background(), ins); err != nil {
		w.t.Fatal(err)
	}
}

// hostile is an incident whose every text field is an attack on the page.
func hostileIncident(id string, at time.Time) incident.Incident {
	const x = `<script>document.title='pwned'</script><img src=//evil.example.test/x.png onerror=alert(1)>![a](https://evil.example.test/md.png)`
	return incident.Incident{ID: id, Time: at, Tenant: "acme", Class: "agent", Run: "run_<b>x</b>", Kind: "secret",
		Reason: "secret-detected", Action: "block", Host: "evil.example.test", Port: 443, Method: "POST",
		Path: "/\"><script>alert(2)</script>", Client: "10.0.0.9", Rule: "rule<img src=//evil.example.test/r.png>",
		Where: "json:$.x<style>body{display:none}</style>", Decoding: "base64 > <iframe src=//evil.example.test>",
		Snippet: x, Fingerprint: "fp-hostile"}
}
