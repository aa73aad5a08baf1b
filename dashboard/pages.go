package dashboard

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages serves the HTML dashboard.
type pages struct {
	o    Options
	auth *Auth
	tmpl map[string]*template.Template
	// choices caches the listing's filter choices (pages_triage.go).
	choiceCache choiceCache
}

var funcs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"pct": func(n, d int64) string {
		if d == 0 {
			return "–"
		}
		return strconv.FormatFloat(100*float64(n)/float64(d), 'f', 1, 64) + "%"
	},
	"join": strings.Join,
	"ints": func(v []int) string {
		s := make([]string, len(v))
		for i, n := range v {
			s[i] = strconv.Itoa(n)
		}
		return strings.Join(s, ", ")
	},
	"chain": func(s string) []string {
		var out []string
		for _, p := range strings.Split(s, ">") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	},
	// hostport is host, with ":port" unless the port is 443, 80 or unknown.
	"hostport": func(host string, port int) string {
		if port == 0 || port == 443 || port == 80 {
			return host
		}
		return host + ":" + strconv.Itoa(port)
	},
	"query": func(kv ...string) template.URL { // only ever used after "?"
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Set(kv[i], kv[i+1])
			}
		}
		return template.URL(v.Encode())
	},
}

// parseTemplates parses each page with the layout.
func parseTemplates() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	m := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", n, err)
		}
		m[base] = t
	}
	return m, nil
}

// mountDashboard adds the login, the pages and the API (under /api) to r.
func mountDashboard(r chi.Router, o Options) {
	tmpl, err := parseTemplates()
	if err != nil {
		panic(err) // the templates are embedded: a test catches this
	}
	p := &pages{o: o, auth: newAuth(o), tmpl: tmpl}
	static, _ := fs.Sub(staticFS, "static")
	r.Handle("/static/*", http.StripPrefix("/static/", http.FileServerFS(static)))
	r.Get("/login", p.loginForm)
	r.Post("/login", p.login)
	r.Route("/api", func(ar chi.Router) {
		ar.Use(p.auth.Middleware)
		mountAPI(ar, o)
	})
	r.Group(func(pr chi.Router) {
		pr.Use(p.auth.Middleware)
		pr.Use(staffOnly)
		pr.Post("/logout", p.logout)
		pr.Get("/", p.overview)
		pr.Get("/incidents", p.incidents)
		pr.Get("/incidents/{id}", p.incident)
		pr.Get("/incidents/{id}/har", p.har)
		pr.With(require(RoleReviewer)).Post("/incidents/{id}/triage", p.triage)
		pr.Get("/rules", p.rules)
		pr.With(require(RoleAdmin)).Post("/proposals/{id}/close", p.closeProposal)
		pr.Get("/policy", p.policy)
		pr.Get("/access", p.access)
		pr.With(require(RoleReviewer)).Post("/access/{id}/decide", p.decide)
		pr.Get("/audit", p.audit)
		mountReviewPages(pr, p)
		mountTriage(pr, p)
	})
}

// staffOnly keeps tenant principals (API tokens) off the pages.
func staffOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := PrincipalFrom(r.Context()); !ok || !p.AtLeast(RoleViewer) {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// require refuses principals below role.
func require(role Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p, ok := PrincipalFrom(r.Context()); !ok || !p.AtLeast(role) {
				http.Error(w, "forbidden: this needs the "+string(role)+" role", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// view is what every page template gets.
type view struct {
	Title string
	Nav   string
	User  Principal
	CSRF  string
	// Flash is a one-line message (an error after a form).
	Flash string
	Data  any
}

// Can reports whether the user holds role (for showing forms).
func (v view) Can(role string) bool { return v.User.AtLeast(Role(role)) }

func (p *pages) logger() *slog.Logger { return p.o.logger() }

func (p *pages) render(w http.ResponseWriter, r *http.Request, code int, name, title string, data any) {
	v := view{Title: title, Nav: name, Data: data}
	v.User, _ = PrincipalFrom(r.Context())
	if s := sessionFrom(r.Context()); s != nil {
		v.CSRF = s.CSRF
	}
	p.renderView(w, code, name, v)
}

func (p *pages) renderView(w http.ResponseWriter, code int, name string, v view) {
	t := p.tmpl[name]
	var buf bytes.Buffer
	if t == nil {
		p.logger().Error("dashboard: no template", "name", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		p.logger().Error("dashboard: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// fail answers an error page; internals go to the log only.
func (p *pages) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := http.StatusInternalServerError, "Something went wrong; the log has the details."
	switch {
	case errors.Is(err, store.ErrNotFound):
		code, msg = http.StatusNotFound, "Not found."
	case errors.Is(err, store.ErrInvalid), errors.Is(err, errBadInput):
		code, msg = http.StatusBadRequest, err.Error()
	case errors.Is(err, store.ErrConflict):
		code, msg = http.StatusConflict, err.Error()
	}
	if code == http.StatusInternalServerError {
		p.logger().Error("dashboard: page", "path", r.URL.Path, "err", err)
	}
	p.render(w, r, code, "error", http.StatusText(code), msg)
}

var errBadInput = errors.New("bad input")

// safeNext returns a local path to go to after login, "/" for anything
// else (an absolute URL, "//host", a backslash trick).
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsAny(next, "\\\r\n\t") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

type loginData struct {
	Next  string
	Error string
	Name  string
}

func (p *pages) loginForm(w http.ResponseWriter, r *http.Request) {
	if s := p.auth.Sessions.FromRequest(r); s != nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	p.showLogin(w, r, http.StatusOK, loginData{Next: safeNext(r.URL.Query().Get("next"))})
}

// showLogin renders the login form with a fresh CSRF token, also set as a
// cookie (double submit: no session exists yet).
func (p *pages) showLogin(w http.ResponseWriter, r *http.Request, code int, d loginData) {
	tok, err := randomToken()
	if err != nil {
		p.fail(w, r, err)
		return
	}
	setCookie(w, r, loginCSRFCookie, tok, 0)
	p.renderView(w, code, "login", view{Title: "Log in", Nav: "login", CSRF: tok, Data: d})
}

func (p *pages) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	c, err := r.Cookie(loginCSRFCookie)
	form := r.PostFormValue("csrf")
	if err != nil || c.Value == "" || form == "" || !(&Session{CSRF: c.Value}).CheckCSRF(form) {
		p.showLogin(w, r, http.StatusForbidden, loginData{Error: "The form expired; please try again."})
		return
	}
	name, password := r.PostFormValue("user"), r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	pr, err := p.auth.Login(r, name, password)
	if err != nil {
		code := http.StatusUnauthorized
		if errors.Is(err, errThrottled) {
			code = http.StatusTooManyRequests
			w.Header().Set("Retry-After", strconv.Itoa(int(p.auth.Limiter.window().Seconds())))
		}
		p.showLogin(w, r, code, loginData{Error: err.Error(), Next: next, Name: name})
		return
	}
	if _, err := p.auth.Sessions.Create(w, r, pr); err != nil {
		p.fail(w, r, err)
		return
	}
	setCookie(w, r, loginCSRFCookie, "", 0)
	p.logger().Info("dashboard: login", "user", pr.Name, "role", string(pr.Role), "client", clientIP(r))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (p *pages) logout(w http.ResponseWriter, r *http.Request) {
	p.auth.Sessions.Destroy(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
