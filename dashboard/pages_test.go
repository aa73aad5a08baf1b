package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

var pageRoutes = []string{"/", "/incidents", "/incidents/inc_x", "/incidents/inc_x/har", "/rules", "/policy", "/access", "/audit"}

func TestPagesNeedLogin(t *testing.T) {
	w := mustPageWorld(t)
	c := w.client()
	for _, p := range pageRoutes {
		t.Run("GET "+p, func(t *testing.T) {
			r := c.get(p)
			if r.code != http.StatusSeeOther || !strings.HasPrefix(r.hdr.Get("Location"), "/login?next=") {
				t.Fatalf("%d %q", r.code, r.hdr.Get("Location"))
			}
		})
	}
	for _, p := range []string{"/incidents/inc_x/triage", "/access/req_x/decide", "/proposals/prp_x/close", "/logout"} {
		t.Run("POST "+p, func(t *testing.T) {
			if r := c.do("POST", p, url.Values{"state": {"acknowledged"}}); r.code != http.StatusForbidden {
				t.Fatalf("%d", r.code)
			}
		})
	}
	t.Run("API", func(t *testing.T) {
		r := c.get("/api/incidents")
		if r.code != http.StatusUnauthorized || !strings.HasPrefix(r.hdr.Get("WWW-Authenticate"), "Basic") {
			t.Fatalf("%d %v", r.code, r.hdr)
		}
	})
	t.Run("health stays open", func(t *testing.T) {
		if r := c.get("/healthz"); r.code != 200 {
			t.Fatalf("%d", r.code)
		}
	})
}

func TestSecurityHeaders(t *testing.T) {
	w := mustPageWorld(t)
	c := w.client()
	c.mustLogin("vera")
	for _, p := range []string{"/login", "/", "/incidents", "/static/sluice.css", "/api/incidents", "/nope"} {
		r := c.get(p)
		for k, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"X-Frame-Options":         "DENY",
		} {
			if got := r.hdr.Get(k); got != want {
				t.Errorf("%s: %s = %q, want %q", p, k, got, want)
			}
		}
	}
}

func TestLogin(t *testing.T) {
	w := mustPageWorld(t)
	t.Run("wrong password", func(t *testing.T) {
		c := w.client()
		r := c.login("ada", "wrong")
		if r.code != http.StatusUnauthorized || strings.Contains(r.hdr.Get("Set-Cookie"), SessionCookie+"=") {
			t.Fatalf("%d %v", r.code, r.hdr)
		}
		if r := c.get("/"); r.code != http.StatusSeeOther {
			t.Fatalf("in without a password: %d", r.code)
		}
	})
	t.Run("unknown user", func(t *testing.T) {
		if r := w.client().login("mallory", worldPassword); r.code != http.StatusUnauthorized {
			t.Fatalf("%d", r.code)
		}
	})
	t.Run("no CSRF token", func(t *testing.T) {
		c := w.client()
		c.get("/login")
		r := c.do("POST", "/login", url.Values{"user": {"ada"}, "password": {worldPassword}})
		if r.code != http.StatusForbidden {
			t.Fatalf("%d", r.code)
		}
		r = c.do("POST", "/login", url.Values{"csrf": {"forged"}, "user": {"ada"}, "password": {worldPassword}})
		if r.code != http.StatusForbidden {
			t.Fatalf("forged token: %d", r.code)
		}
	})
	t.Run("cookie flags", func(t *testing.T) {
		c := w.client()
		r := c.login("ada", worldPassword)
		var sc string
		for _, v := range r.hdr.Values("Set-Cookie") {
			if strings.HasPrefix(v, SessionCookie+"=") {
				sc = v
			}
		}
		if !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") || strings.Contains(sc, "Secure") {
			t.Fatalf("session cookie %q", sc)
		}
	})
	t.Run("open redirect", func(t *testing.T) {
		for _, next := range []string{"//evil.example.test/", "https://evil.example.test/", "/\\evil.example.test", "javascript:alert(1)"} {
			c := w.client()
			tok := csrfOf(t, c.get("/login").body)
			r := c.do("POST", "/login", url.Values{"csrf": {tok}, "user": {"ada"}, "password": {worldPassword}, "next": {next}})
			if r.code != http.StatusSeeOther || r.hdr.Get("Location") != "/" {
				t.Errorf("next %q: %d %q", next, r.code, r.hdr.Get("Location"))
			}
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		w := mustPageWorld(t)
		c := w.client()
		for range 10 {
			c.login("ada", "wrong")
		}
		r := c.login("ada", worldPassword)
		if r.code != http.StatusTooManyRequests || r.hdr.Get("Retry-After") == "" {
			t.Fatalf("%d", r.code)
		}
	})
	t.Run("logout", func(t *testing.T) {
		c := w.client()
		tok := c.mustLogin("ada")
		if r := c.do("POST", "/logout", url.Values{"csrf": {tok}}); r.code != http.StatusSeeOther {
			t.Fatalf("logout %d", r.code)
		}
		if r := c.get("/"); r.code != http.StatusSeeOther {
			t.Fatalf("still in after logout: %d", r.code)
		}
	})
}

func TestSessionExpires(t *testing.T) {
	now := time.Now()
	w := mustPageWorld(t, func(o *Options) {
		o.Now = func() time.Time { return now }
		o.SessionTTL = time.Hour
	})
	c := w.client()
	c.mustLogin("vera")
	now = now.Add(59 * time.Minute)
	if r := c.get("/"); r.code != 200 {
		t.Fatalf("before expiry: %d", r.code)
	}
	now = now.Add(2 * time.Minute)
	if r := c.get("/"); r.code != http.StatusSeeOther {
		t.Fatalf("after expiry: %d", r.code)
	}
}

func TestTriage(t *testing.T) {
	w := mustPageWorld(t)
	now := time.Now().UTC()
	w.insert(incident.Incident{ID: "inc_1", Time: now, Tenant: "acme", Class: "agent", Kind: "secret", Reason: "secret-detected",
		Action: "block", Host: "api.example.test", Port: 443, Method: "POST", Path: "/v1/x", Rule: "github-pat",
		Where: "header:Authorization", Decoding: "base64", Snippet: "ghp_****", Fingerprint: "fp1"})
	state := func() string {
		in, err := w.store.GetIncident(context.Background(), "inc_1")
		if err != nil {
			t.Fatal(err)
		}
		return in.Triage.State
	}
	viewer, reviewer, admin := w.client(), w.client(), w.client()
	vt, rt, at := viewer.mustLogin("vera"), reviewer.mustLogin("rex"), admin.mustLogin("ada")

	tests := []struct {
		name string
		c    *client
		form url.Values
		code int
		want string
	}{
		{"viewer may not", viewer, url.Values{"csrf": {vt}, "state": {"acknowledged"}}, 403, "new"},
		{"no CSRF token", reviewer, url.Values{"state": {"acknowledged"}}, 403, "new"},
		{"another session's token", reviewer, url.Values{"csrf": {at}, "state": {"acknowledged"}}, 403, "new"},
		{"unknown state", reviewer, url.Values{"csrf": {rt}, "state": {"gone"}}, 400, "new"},
		{"false positive needs a reason", reviewer, url.Values{"csrf": {rt}, "state": {"false-positive"}}, 400, "new"},
		{"proposal needs a false positive", reviewer, url.Values{"csrf": {rt}, "state": {"acknowledged"}, "propose": {"policy-entry"}}, 400, "new"},
		{"acknowledge", reviewer, url.Values{"csrf": {rt}, "state": {"acknowledged"}, "note": {"looking"}}, 303, "acknowledged"},
		{"false positive with a proposal", admin, url.Values{"csrf": {at}, "state": {"false-positive"},
			"note": {"test fixture token <b>"}, "propose": {"rule-allowlist"}}, 303, "false-positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.c.do("POST", "/incidents/inc_1/triage", tc.form)
			if r.code != tc.code {
				t.Fatalf("code %d, want %d: %s", r.code, tc.code, r.body)
			}
			if got := state(); got != tc.want {
				t.Fatalf("state %q, want %q", got, tc.want)
			}
		})
	}
	page := viewer.get("/incidents/inc_1").body
	for _, want := range []string{"test fixture token &lt;b&gt;", "looking", "rex", "header:Authorization", "ghp_****"} {
		if !strings.Contains(page, want) {
			t.Errorf("incident page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="triage-form"`) {
		t.Error("the viewer sees the triage form")
	}
	rules := viewer.get("/rules").body
	for _, want := range []string{"github-pat", "rule-allowlist", "100.0%", "test fixture token &lt;b&gt;"} {
		if !strings.Contains(rules, want) {
			t.Errorf("rules page lacks %q", want)
		}
	}
	audit := viewer.get("/audit").body
	for _, want := range []string{"incident.triage", "proposal.rule-allowlist"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit page lacks %q", want)
		}
	}
	// Closing a proposal is for admins.
	ps, _ := w.store.ListProposals(context.Background(), store.ProposalFilter{})
	if len(ps) != 1 {
		t.Fatalf("%d proposals", len(ps))
	}
	if r := reviewer.do("POST", "/proposals/"+ps[0].ID+"/close", url.Values{"csrf": {rt}}); r.code != 403 {
		t.Fatalf("reviewer closed a proposal: %d", r.code)
	}
	if r := admin.do("POST", "/proposals/"+ps[0].ID+"/close", url.Values{"csrf": {at}, "note": {"done"}}); r.code != 303 {
		t.Fatalf("admin close: %d %s", r.code, r.body)
	}
	if r := admin.do("POST", "/proposals/"+ps[0].ID+"/close", url.Values{"csrf": {at}}); r.code != 409 {
		t.Fatalf("closed twice: %d", r.code)
	}
}

func TestHostileIncidentIsInert(t *testing.T) {
	w := mustPageWorld(t)
	now := time.Now().UTC()
	w.insert(hostileIncident("inc_evil", now), hostileIncident("inc_evil2", now.Add(-time.Second)))
	c := w.client()
	c.mustLogin("vera")
	for _, p := range []string{"/incidents/inc_evil", "/incidents", "/", "/rules", "/incidents?" + url.Values{"host": {"<script>"}}.Encode()} {
		t.Run(p, func(t *testing.T) {
			r := c.get(p)
			if r.code != 200 {
				t.Fatalf("%d: %s", r.code, r.body)
			}
			assertInert(t, r.body)
		})
	}
	body := c.get("/incidents/inc_evil").body
	if !strings.Contains(body, "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;") {
		t.Error("the snippet is not shown escaped")
	}
}

func TestIncidentFiltersAndPaging(t *testing.T) {
	w := mustPageWorld(t)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var ins []incident.Incident
	for i := range 130 {
		host := "a.example.test"
		if i%2 == 1 {
			host = "b.example.test"
		}
		ins = append(ins, incident.Incident{ID: fmt.Sprintf("inc_%03d", i), Time: base.Add(time.Duration(i) * time.Minute),
			Tenant: "acme", Kind: "deny", Reason: "host-not-allowed", Action: "block", Host: host, Port: 443})
	}
	w.insert(ins...)
	c := w.client()
	c.mustLogin("vera")
	seen := map[string]bool{}
	path := "/incidents?host=b.example.test&since=2026-03-01T12:00"
	for pages := 0; path != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		r := c.get(path)
		if r.code != 200 {
			t.Fatalf("%s: %d %s", path, r.code, r.body)
		}
		if strings.Contains(listTable(r.body), "a.example.test") { // the filter's choices name it
			t.Fatal("the host filter let another host through")
		}
		for _, m := range incLinkRE.FindAllStringSubmatch(r.body, -1) {
			if seen[m[1]] {
				t.Fatalf("%s seen twice", m[1])
			}
			seen[m[1]] = true
		}
		path = ""
		if m := nextRE.FindStringSubmatch(r.body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if len(seen) != 65 {
		t.Fatalf("%d incidents over all pages, want 65", len(seen))
	}
	r := c.get("/incidents?until=2026-03-01T12:10&host=a.example.test")
	if n := len(incLinkRE.FindAllString(r.body, -1)); n != 5 {
		t.Fatalf("time range: %d incidents, want 5", n)
	}
	if r := c.get("/incidents?since=yesterday"); r.code != 400 {
		t.Fatalf("bad time: %d", r.code)
	}
	if r := c.get("/incidents?after=garbage"); r.code != 400 {
		t.Fatalf("bad cursor: %d", r.code)
	}
}

func TestPolicyPage(t *testing.T) {
	w := mustPageWorld(t)
	c := w.client()
	c.mustLogin("vera")
	body := c.get("/policy").body
	if testing.Verbose() {
		t.Log(body)
	}
	for _, want := range []string{"acme / agent", "acme / validation", "globex / agent", "api.github.test", "*.pkg.example.test",
		"pinned.example.test", "passthrough", "sluice.yaml:8", "Nothing allowed"} {
		if !strings.Contains(body, want) {
			t.Errorf("policy page lacks %q", want)
		}
	}
	for tn, tok := range w.tenantTokens {
		if strings.Contains(body, tok) {
			t.Errorf("policy page shows %s's token", tn)
		}
	}
	if body := c.get("/policy?tenant=globex").body; strings.Contains(body, "api.github.test") {
		t.Error("tenant filter ignored")
	}
}

func TestAccessPage(t *testing.T) {
	w := mustPageWorld(t)
	ctx := context.Background()
	a, err := w.store.CreateAccessRequest(ctx, store.AccessRequest{Tenant: "acme", Host: "new.example.test",
		Justification: "need <b>it</b>", ExpiresAt: time.Now().Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	viewer, reviewer := w.client(), w.client()
	vt, rt := viewer.mustLogin("vera"), reviewer.mustLogin("rex")
	body := viewer.get("/access").body
	if !strings.Contains(body, "new.example.test") || !strings.Contains(body, "need &lt;b&gt;it&lt;/b&gt;") {
		t.Fatalf("pending request not listed:\n%s", body)
	}
	if strings.Contains(body, `class="decide"`) {
		t.Error("the viewer sees the decision form")
	}
	decide := func(c *client, tok, decision, reason string) resp {
		return c.do("POST", "/access/"+a.ID+"/decide", url.Values{"csrf": {tok}, "decision": {decision}, "reason": {reason}})
	}
	if r := decide(viewer, vt, "approve", "ok"); r.code != 403 {
		t.Fatalf("viewer decided: %d", r.code)
	}
	if r := decide(reviewer, rt, "approve", ""); r.code != 400 {
		t.Fatalf("no reason: %d", r.code)
	}
	if r := decide(reviewer, rt, "maybe", "x"); r.code != 400 {
		t.Fatalf("bad decision: %d", r.code)
	}
	if r := decide(reviewer, "", "approve", "x"); r.code != 403 {
		t.Fatalf("no CSRF: %d", r.code)
	}
	if r := decide(reviewer, rt, "approve", "build needs it"); r.code != 303 {
		t.Fatalf("approve: %d %s", r.code, r.body)
	}
	got, err := w.store.GetAccessRequest(ctx, a.ID)
	if err != nil || got.State != store.AccessApproved || got.Reviewer != "rex" {
		t.Fatalf("after approval: %+v %v", got, err)
	}
	if r := decide(reviewer, rt, "deny", "again"); r.code != 409 {
		t.Fatalf("decided twice: %d", r.code)
	}
	if body := viewer.get("/access?state=approved").body; !strings.Contains(body, "build needs it") {
		t.Error("approved request not listed with its reason")
	}
}

func TestHAR(t *testing.T) {
	w := mustPageWorld(t)
	w.insert(incident.Incident{ID: "inc_h", Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Tenant: "acme", Kind: "secret",
		Reason: "secret-detected", Action: "block", Host: "api.example.test", Port: 8443, Method: "POST", Path: "/v1/chat",
		Rule: "openai-key", Where: "json:$.key", Snippet: "sk-****", Fingerprint: "fp"})
	c := w.client()
	c.mustLogin("vera")
	r := c.get("/incidents/inc_h/har")
	if r.code != 200 || !strings.Contains(r.hdr.Get("Content-Disposition"), `filename="inc_h.har"`) {
		t.Fatalf("%d %v", r.code, r.hdr)
	}
	var h struct {
		Log struct {
			Version string
			Entries []struct {
				StartedDateTime string
				Request         struct {
					Method, URL string
					PostData    struct{ Text string }
				}
				Response struct {
					Status  int
					Headers []struct{ Name, Value string }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(r.body), &h); err != nil {
		t.Fatal(err)
	}
	if h.Log.Version != "1.2" || len(h.Log.Entries) != 1 {
		t.Fatalf("%+v", h)
	}
	e := h.Log.Entries[0]
	if e.Request.Method != "POST" || e.Request.URL != "https://api.example.test:8443/v1/chat" || e.Request.PostData.Text != "sk-****" ||
		e.Response.Status != 403 || e.StartedDateTime != "2026-03-01T12:00:00.000Z" {
		t.Fatalf("%+v", e)
	}
	if r := c.get("/incidents/inc_nope/har"); r.code != 404 {
		t.Fatalf("unknown incident: %d", r.code)
	}
}

func TestOverview(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	w := mustPageWorld(t, func(o *Options) { o.Now = func() time.Time { return now } })
	w.insert(
		incident.Incident{ID: "inc_1", Time: now.Add(-time.Hour), Tenant: "acme", Kind: "deny", Action: "block", Host: "x.example.test"},
		incident.Incident{ID: "inc_2", Time: now.Add(-2 * time.Hour), Tenant: "globex", Kind: "secret", Action: "alert", Rule: "aws-key", Host: "y.example.test"},
		incident.Incident{ID: "inc_3", Time: now.Add(-48 * time.Hour), Tenant: "acme", Kind: "secret", Action: "block", Rule: "old-rule", Host: "z.example.test"},
	)
	c := w.client()
	c.mustLogin("vera")
	body := c.get("/").body
	for _, want := range []string{"<svg", "aws-key", "x.example.test", "2 in 24h"} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if strings.Contains(body, "old-rule") {
		t.Error("a 2-day-old incident in the 24h overview")
	}
	if body := c.get("/?range=7d&by=tenant").body; !strings.Contains(body, "3 in 7d") || !strings.Contains(body, ">globex</text>") {
		t.Error("7d by tenant")
	}
}

// listTable is the incidents table of a listing page.
func listTable(page string) string {
	_, rest, _ := strings.Cut(page, `id="incidents"`)
	table, _, _ := strings.Cut(rest, "</table>")
	return table
}

// ownScript reports a script element that only loads one of the
// dashboard's own files (/static/…), with no inline code.
func ownScript(n *html.Node) bool {
	if n.FirstChild != nil {
		return false
	}
	src := false
	for _, a := range n.Attr {
		switch {
		case a.Key == "src" && strings.HasPrefix(a.Val, "/static/") && !strings.Contains(a.Val, ".."):
			src = true
		case a.Key == "defer":
		default:
			return false
		}
	}
	return src
}

var (
	incLinkRE = regexp.MustCompile(`<a href="/incidents/(inc_[^"/]+)"`)
	nextRE    = regexp.MustCompile(`href="(/incidents\?[^"]+)" id="next"`)
)

// assertInert parses a page and fails on any element that could run script
// or fetch from elsewhere, any event handler attribute, and any URL
// attribute that leaves the dashboard.
func assertInert(t *testing.T, page string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script":
				if !ownScript(n) {
					t.Errorf("element <%s> %v on the page", n.Data, n.Attr)
				}
			case "img", "iframe", "style", "object", "embed", "base", "meta":
				if n.Data == "meta" && len(n.Attr) > 0 && (n.Attr[0].Key == "charset" || n.Attr[0].Key == "name") {
					break
				}
				t.Errorf("element <%s> %v on the page", n.Data, n.Attr)
			}
			for _, a := range n.Attr {
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("event handler %s=%q on <%s>", a.Key, a.Val, n.Data)
				}
				switch a.Key {
				case "href", "src", "action", "formaction", "xlink:href", "data":
					if !strings.HasPrefix(a.Val, "/") || strings.HasPrefix(a.Val, "//") {
						if !(n.Data == "link" && a.Val == "data:,") && !(n.Data == "svg") {
							t.Errorf("<%s %s=%q> leaves the dashboard", n.Data, a.Key, a.Val)
						}
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

func TestPagesAPIAuth(t *testing.T) {
	w := mustPageWorld(t)
	w.insert(incident.Incident{ID: "inc_a", Time: time.Now(), Tenant: "acme", Kind: "deny", Action: "block", Host: "a.example.test"},
		incident.Incident{ID: "inc_g", Time: time.Now(), Tenant: "globex", Kind: "deny", Action: "block", Host: "g.example.test"})
	c := w.client()
	basic := func(user, pw string) string {
		req, _ := http.NewRequest("GET", "/", nil)
		req.SetBasicAuth(user, pw)
		return req.Header.Get("Authorization")
	}
	tests := []struct {
		name, authz string
		code        int
		sees, hides string
	}{
		{"basic", basic("vera", worldPassword), 200, "g.example.test", ""},
		{"basic wrong", basic("vera", "nope"), 401, "", ""},
		{"tenant token", "Bearer acme:" + w.tenantTokens["acme"], 200, "a.example.test", "g.example.test"},
		{"tenant token for another tenant", "Bearer globex:" + w.tenantTokens["acme"], 401, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do("GET", "/api/incidents", nil, "Authorization", tc.authz)
			if r.code != tc.code {
				t.Fatalf("%d: %s", r.code, r.body)
			}
			if tc.sees != "" && !strings.Contains(r.body, tc.sees) || tc.hides != "" && strings.Contains(r.body, tc.hides) {
				t.Fatalf("body %s", r.body)
			}
		})
	}
	t.Run("session cookie", func(t *testing.T) {
		c := w.client()
		tok := c.mustLogin("rex")
		if r := c.get("/api/incidents"); r.code != 200 {
			t.Fatalf("GET with the session: %d", r.code)
		}
		body := url.Values{} // the API reads JSON; the CSRF check comes first
		if r := c.do("POST", "/api/incidents/inc_a/triage", body); r.code != 403 || !strings.Contains(r.body, CSRFHeader) {
			t.Fatalf("POST without %s: %d %s", CSRFHeader, r.code, r.body)
		}
		if r := c.do("POST", "/api/incidents/inc_a/triage", body, CSRFHeader, tok); r.code == 403 || r.code == 401 {
			t.Fatalf("POST with %s: %d %s", CSRFHeader, r.code, r.body)
		}
	})
	t.Run("tenant token on pages", func(t *testing.T) {
		r := c.do("GET", "/incidents", nil, "Authorization", "Bearer acme:"+w.tenantTokens["acme"])
		if r.code != http.StatusSeeOther {
			t.Fatalf("a tenant token opened a page: %d", r.code)
		}
	})
}
