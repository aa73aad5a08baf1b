package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

const apiConfig = `
tenants:
  acme:
    token_file: acme.token
    classes:
      agent: {}
  globex:
    token_file: globex.token
    classes:
      agent: {}
`

// apiWorld is the API on a real router, store and engine, with a hand-made RunManager.
type apiWorld struct {
	srv    *httptest.Server
	st     *store.Store
	engine *rules.Engine
	tokens map[string]string
	runs   *fakeRuns
}

// fakeRuns is a RunManager whose run methods the tests set; access decisions go
// to a real runs.Service on the world's store and engine.
type fakeRuns struct {
	*runs.Service
	CreateFn func(ctx context.Context, r runs.Request) (runs.Created, error)
	EndFn    func(ctx context.Context, id, actor string) (runs.Run, error)
}

func (f *fakeRuns) CreateRun(ctx context.Context, r runs.Request) (runs.Created, error) {
	return f.CreateFn(ctx, r)
}

func (f *fakeRuns) EndRun(ctx context.Context, id, actor string) (runs.Run, error) {
	return f.EndFn(ctx, id, actor)
}

const password = "correct horse battery staple"

func newAPIWorld(t *testing.T) *apiWorld {
	t.Helper()
	dir := t.TempDir()
	w := &apiWorld{tokens: map[string]string{}, runs: &fakeRuns{}}
	for _, tn := range []string{"acme", "globex"} {
		tok, err := rules.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		w.tokens[tn] = tok
		if err := os.WriteFile(filepath.Join(dir, tn+".token"), []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfgPath, []byte(apiConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if w.engine, err = rules.Compile(cfg.Policy(), cfg.Token); err != nil {
		t.Fatal(err)
	}
	if w.st, err = store.Open(context.Background(), filepath.Join(dir, store.FileName)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.st.Close() })
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	var users []User
	for _, r := range []Role{RoleViewer, RoleReviewer, RoleAdmin} {
		users = append(users, User{Name: string(r) + "-user", Role: r, Hash: string(h)})
	}
	w.runs.Service = &runs.Service{Store: runstore.New(w.st), Engine: func() *rules.Engine { return w.engine }}
	w.runs.CreateFn = func(ctx context.Context, r runs.Request) (runs.Created, error) {
		run, err := w.st.CreateRun(ctx, store.Run{Tenant: r.Tenant, Class: r.Class, TokenHash: "h-" + r.Actor + time.Now().String(),
			Expires: time.Now().Add(r.TTL), RepoRemote: r.RepoRemote})
		if err != nil {
			return runs.Created{}, err
		}
		return runs.Created{Run: runs.Run(run), Token: "run-token", ProxyURL: "http://" + r.Tenant + ":run-token@127.0.0.1:3128", CAPEM: "PEM"}, nil
	}
	w.runs.EndFn = func(ctx context.Context, id, actor string) (runs.Run, error) {
		run, err := w.st.EndRun(ctx, id, time.Time{})
		return runs.Run(run), err
	}
	o := Options{
		Store:    w.st,
		Engine:   func() *rules.Engine { return w.engine },
		Users:    users,
		Identify: w.engine.Identify,
		Runs:     w.runs,
	}
	w.srv = httptest.NewServer(NewRouter(o))
	t.Cleanup(w.srv.Close)
	return w
}

// as is who calls: a staff role or "tenant:<name>".
type as string

const (
	viewer   as = "viewer"
	reviewer as = "reviewer"
	admin    as = "admin"
	acme     as = "tenant:acme"
	globex   as = "tenant:globex"
	nobody   as = ""
)

// call sends a request and decodes the JSON answer into out (when not nil); it returns
// the status and the "error" field.
func (w *apiWorld) call(t *testing.T, who as, method, path string, body any, out any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequest(method, w.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if tn, ok := strings.CutPrefix(string(who), "tenant:"); ok {
		req.Header.Set("Authorization", "Bearer "+tn+":"+w.tokens[tn])
	} else if who != nobody {
		req.SetBasicAuth(string(who)+"-user", password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error string `json:"error"`
	}
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
			t.Fatalf("%s %s: %d with a body that is not {\"error\": ...}: %q", method, path, resp.StatusCode, b)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s %s: error Content-Type %q", method, path, ct)
		}
	} else if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %q", method, path, err, b)
		}
	}
	return resp.StatusCode, e.Error
}

func (w *apiWorld) incident(t *testing.T, tenant string, at time.Time) string {
	t.Helper()
	id := store.NewID(store.PrefixIncident, at)
	if err := w.st.InsertIncidents(context.Background(), []incident.Incident{{ID: id, Time: at, Tenant: tenant, Kind: "deny",
		Reason: "host-not-allowed", Action: "block", Host: "evil.example.test", Port: 443}}); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestAPITenantIsolation(t *testing.T) {
	w := newAPIWorld(t)
	now := time.Now()
	incB := w.incident(t, "globex", now)
	incA := w.incident(t, "acme", now)
	var created runCreatedJSON
	if code, msg := w.call(t, globex, "POST", "/api/runs", map[string]any{"class": "agent"}, &created); code != 201 {
		t.Fatalf("globex creates a run: %d %s", code, msg)
	}
	var reqB accessJSON
	if code, msg := w.call(t, globex, "POST", "/api/access-requests", map[string]any{"host": "pkg.globex.test", "justification": "builds"}, &reqB); code != 201 {
		t.Fatalf("globex files a request: %d %s", code, msg)
	}
	var reqA accessJSON
	if code, msg := w.call(t, acme, "POST", "/api/access-requests", map[string]any{"host": "pkg.acme.test", "justification": "builds"}, &reqA); code != 201 {
		t.Fatalf("acme files a request: %d %s", code, msg)
	}

	tests := []struct {
		name   string
		method string
		path   string
		body   any
		want   int
	}{
		{"read B's incident", "GET", "/api/incidents/" + incB, nil, 404},
		{"triage B's incident", "POST", "/api/incidents/" + incB + "/triage", map[string]string{"state": "resolved"}, 404},
		{"triage own incident (no reviewer role)", "POST", "/api/incidents/" + incA + "/triage", map[string]string{"state": "resolved"}, 403},
		{"list B's incidents", "GET", "/api/incidents?tenant=globex", nil, 403},
		{"read B's run", "GET", "/api/runs/" + created.ID, nil, 404},
		{"end B's run", "DELETE", "/api/runs/" + created.ID, nil, 404},
		{"list B's runs", "GET", "/api/runs?tenant=globex", nil, 403},
		{"create a run for B", "POST", "/api/runs", map[string]any{"tenant": "globex"}, 403},
		{"read B's request", "GET", "/api/access-requests/" + reqB.ID, nil, 404},
		{"decide B's request", "POST", "/api/access-requests/" + reqB.ID + "/decision", map[string]any{"approve": true, "reason": "x"}, 404},
		{"decide own request", "POST", "/api/access-requests/" + reqA.ID + "/decision", map[string]any{"approve": true, "reason": "x"}, 403},
		{"file a request for B", "POST", "/api/access-requests", map[string]any{"tenant": "globex", "host": "x.example.test", "justification": "j"}, 403},
		{"list B's requests", "GET", "/api/access-requests?tenant=globex", nil, 403},
		{"read the audit log", "GET", "/api/audit", nil, 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code, msg := w.call(t, acme, tc.method, tc.path, tc.body, nil); code != tc.want {
				t.Fatalf("acme: %d %s, want %d", code, msg, tc.want)
			}
		})
	}
	// Listings without a tenant show only acme's own.
	var incs struct{ Incidents []incidentJSON }
	w.call(t, acme, "GET", "/api/incidents", nil, &incs)
	if len(incs.Incidents) != 1 || incs.Incidents[0].ID != incA {
		t.Fatalf("acme's incident listing: %+v", incs.Incidents)
	}
	var runs struct{ Runs []runJSON }
	w.call(t, acme, "GET", "/api/runs", nil, &runs)
	if len(runs.Runs) != 0 {
		t.Fatalf("acme sees runs: %+v", runs.Runs)
	}
	var reqs struct{ Requests []accessJSON }
	w.call(t, acme, "GET", "/api/access-requests", nil, &reqs)
	if len(reqs.Requests) != 1 || reqs.Requests[0].ID != reqA.ID {
		t.Fatalf("acme's request listing: %+v", reqs.Requests)
	}
	// Nothing changed: B's run still active, B's request still pending, B's incident new.
	if r, _ := w.st.GetRun(context.Background(), created.ID); !r.Ended.IsZero() {
		t.Fatal("acme ended globex's run")
	}
	if x, _ := w.st.GetAccessRequest(context.Background(), reqB.ID); x.State != store.AccessPending {
		t.Fatal("acme decided globex's request")
	}
	if in, _ := w.st.GetIncident(context.Background(), incB); in.Triage.State != incident.TriageNew {
		t.Fatal("acme triaged globex's incident")
	}
}

func TestAPIAuth(t *testing.T) {
	w := newAPIWorld(t)
	if code, _ := w.call(t, nobody, "GET", "/api/incidents", nil, nil); code != 401 {
		t.Fatalf("no credentials: %d", code)
	}
	req, _ := http.NewRequest("GET", w.srv.URL+"/api/incidents", nil)
	req.Header.Set("Authorization", "Bearer acme:"+w.tokens["globex"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("acme with globex's token: %d", resp.StatusCode)
	}
}

func TestAPIAccessReview(t *testing.T) {
	w := newAPIWorld(t)
	var x accessJSON
	code, msg := w.call(t, acme, "POST", "/api/access-requests", map[string]any{
		"host": "pkg.acme.test", "ports": []int{443}, "methods": []string{"GET"}, "paths": []string{"/v1/"},
		"justification": "the build fetches from it", "ttl": "2h"}, &x)
	if code != 201 || x.State != store.AccessPending || x.Tenant != "acme" {
		t.Fatalf("create: %d %s %+v", code, msg, x)
	}
	if d := time.Until(x.ExpiresAt); d < time.Hour || d > 2*time.Hour {
		t.Fatalf("expires in %s, want about 2h", d)
	}
	path := "/api/access-requests/" + x.ID + "/decision"
	if code, _ := w.call(t, viewer, "POST", path, map[string]any{"approve": true, "reason": "ok"}, nil); code != 403 {
		t.Fatalf("viewer decides: %d", code)
	}
	if code, _ := w.call(t, reviewer, "POST", path, map[string]any{"reason": "ok"}, nil); code != 400 {
		t.Fatalf("decision without approve: %d", code)
	}
	if g := w.engine.Grants(); len(g) != 0 {
		t.Fatalf("grants installed before any decision: %+v", g)
	}
	var got accessJSON
	if code, msg := w.call(t, reviewer, "POST", path, map[string]any{"approve": true, "reason": "needed for builds"}, &got); code != 200 {
		t.Fatalf("reviewer approves: %d %s", code, msg)
	}
	if got.State != store.AccessApproved || got.Reviewer != "reviewer-user" {
		t.Fatalf("after approval: %+v", got)
	}
	// The approval applies at once: the engine holds the grant.
	if g := w.engine.Grants(); len(g) != 1 || g[0].ID != x.ID {
		t.Fatalf("engine grants after approval: %+v, want %s", g, x.ID)
	}
	if code, _ := w.call(t, admin, "POST", path, map[string]any{"approve": false, "reason": "changed my mind"}, nil); code != 409 {
		t.Fatalf("second decision: %d, want 409", code)
	}
	grants, err := w.st.ActiveGrants(context.Background(), time.Now())
	if err != nil || len(grants) != 1 {
		t.Fatalf("active grants %v %v", grants, err)
	}
	g := runs.GrantOf(runs.AccessRequest(grants[0]))
	if g.Entry.Host != "pkg.acme.test" || g.Tenant != "acme" || g.ID != x.ID {
		t.Fatalf("grant %+v", g)
	}
	// The audit log has the request and the decision.
	var audit struct{ Entries []auditJSON }
	w.call(t, viewer, "GET", "/api/audit?tenant=acme", nil, &audit)
	var actions []string
	for _, e := range audit.Entries {
		actions = append(actions, e.Action+" by "+e.Actor)
	}
	if want := "access.approved by reviewer-user,access.requested by tenant:acme"; strings.Join(actions, ",") != want {
		t.Fatalf("audit: %q, want %q", strings.Join(actions, ","), want)
	}
}

func TestAPIAccessRequestInvalid(t *testing.T) {
	w := newAPIWorld(t)
	tests := []struct {
		name string
		body any
		want int
	}{
		{"bad host", map[string]any{"host": "*.com", "justification": "j"}, 400},
		{"no host", map[string]any{"justification": "j"}, 400},
		{"no justification", map[string]any{"host": "x.example.test"}, 400},
		{"preset smuggled", map[string]any{"host": "x.example.test", "justification": "j", "preset": "npm"}, 400},
		{"bad method", map[string]any{"host": "x.example.test", "justification": "j", "methods": []string{"CONNECT"}}, 400},
		{"too long", map[string]any{"host": "x.example.test", "justification": "j", "ttl": "9000h"}, 400},
		{"in the past", map[string]any{"host": "x.example.test", "justification": "j", "expires_at": time.Now().Add(-time.Hour)}, 400},
		{"not JSON", "{", 400},
		{"two objects", `{"host":"x.example.test","justification":"j"}{}`, 400},
		{"huge", `{"justification":"` + strings.Repeat("a", 70<<10) + `"}`, 413},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code, msg := w.call(t, acme, "POST", "/api/access-requests", tc.body, nil); code != tc.want {
				t.Fatalf("%d %s, want %d", code, msg, tc.want)
			}
		})
	}
	if xs, _ := w.st.ListAccessRequests(context.Background(), store.AccessFilter{}); len(xs) != 0 {
		t.Fatalf("invalid requests were stored: %+v", xs)
	}
}

func TestAPIRuns(t *testing.T) {
	w := newAPIWorld(t)
	var seen runs.Request
	inner := w.runs.CreateFn
	w.runs.CreateFn = func(ctx context.Context, r runs.Request) (runs.Created, error) {
		seen = r
		return inner(ctx, r)
	}
	body := map[string]any{"class": "agent", "ttl": "30m", "repo_remote": "https://git.example.test/acme/app.git",
		"manifests": map[string]string{"package.json": "{}"}, "extras": []map[string]any{{"host": "x.example.test"}}}
	var c runCreatedJSON
	if code, msg := w.call(t, acme, "POST", "/api/runs", body, &c); code != 201 {
		t.Fatalf("create: %d %s", code, msg)
	}
	if seen.Tenant != "acme" || seen.Actor != "tenant:acme" || seen.TTL != 30*time.Minute || seen.Manifests["package.json"] != "{}" ||
		len(seen.Extras) != 1 || seen.Extras[0].Host != "x.example.test" {
		t.Fatalf("manager got %+v", seen)
	}
	if c.Token != "run-token" || c.ID == "" || !c.Active || c.Presets == nil || c.Suggestions == nil {
		t.Fatalf("answer %+v", c)
	}
	var one runJSON
	if code, _ := w.call(t, acme, "GET", "/api/runs/"+c.ID, nil, &one); code != 200 || one.ID != c.ID {
		t.Fatalf("get: %d %+v", code, one)
	}
	raw := fmt.Sprint(one)
	if strings.Contains(raw, "run-token") {
		t.Fatal("GET shows the run token")
	}
	for _, tc := range []struct {
		name string
		who  as
		body any
		want int
	}{
		{"ttl too long", acme, map[string]any{"ttl": "200h"}, 400},
		{"bad manifest path", acme, map[string]any{"manifests": map[string]string{"../etc/passwd": ""}}, 400},
		{"viewer", viewer, map[string]any{"tenant": "acme"}, 403},
		{"unknown field", acme, map[string]any{"token": "mine"}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, msg := w.call(t, tc.who, "POST", "/api/runs", tc.body, nil); code != tc.want {
				t.Fatalf("%d %s, want %d", code, msg, tc.want)
			}
		})
	}
	var ended runJSON
	if code, msg := w.call(t, acme, "DELETE", "/api/runs/"+c.ID, nil, &ended); code != 200 || ended.Active || ended.Ended.IsZero() {
		t.Fatalf("end: %d %s %+v", code, msg, ended)
	}
	if code, _ := w.call(t, admin, "DELETE", "/api/runs/run_nope", nil, nil); code != 404 {
		t.Fatalf("end unknown: %d", code)
	}
	// A manager error that is not the caller's fault is a 500 without details.
	w.runs.CreateFn = func(context.Context, runs.Request) (runs.Created, error) {
		return runs.Created{}, errors.New("disk on fire at /secret/path")
	}
	code, msg := w.call(t, admin, "POST", "/api/runs", map[string]any{"tenant": "acme"}, nil)
	if code != 500 || strings.Contains(msg, "/secret/path") {
		t.Fatalf("internal error: %d %q", code, msg)
	}
}

func TestAPIIncidents(t *testing.T) {
	w := newAPIWorld(t)
	base := time.Now().Add(-time.Hour)
	var ids []string
	for i := range 3 {
		ids = append(ids, w.incident(t, "acme", base.Add(time.Duration(i)*time.Minute)))
	}
	var p1 struct {
		Incidents []incidentJSON
		Next      string
	}
	if code, _ := w.call(t, viewer, "GET", "/api/incidents?limit=2&tenant=acme", nil, &p1); code != 200 || len(p1.Incidents) != 2 || p1.Next == "" {
		t.Fatalf("page 1: %d %+v", code, p1)
	}
	if p1.Incidents[0].ID != ids[2] {
		t.Fatalf("not newest first: %s", p1.Incidents[0].ID)
	}
	var p2 struct {
		Incidents []incidentJSON
		Next      string
	}
	w.call(t, viewer, "GET", "/api/incidents?limit=2&after="+p1.Next, nil, &p2)
	if len(p2.Incidents) != 1 || p2.Incidents[0].ID != ids[0] || p2.Next != "" {
		t.Fatalf("page 2: %+v", p2)
	}
	if code, _ := w.call(t, viewer, "GET", "/api/incidents?after=garbage", nil, nil); code != 400 {
		t.Fatalf("bad cursor: %d", code)
	}
	if code, _ := w.call(t, viewer, "GET", "/api/incidents?since=yesterday", nil, nil); code != 400 {
		t.Fatalf("bad since: %d", code)
	}
	path := "/api/incidents/" + ids[0] + "/triage"
	if code, _ := w.call(t, viewer, "POST", path, map[string]string{"state": "resolved"}, nil); code != 403 {
		t.Fatalf("viewer triages: %d", code)
	}
	if code, _ := w.call(t, reviewer, "POST", path, map[string]string{"state": "nonsense"}, nil); code != 400 {
		t.Fatalf("bad state: %d", code)
	}
	var in incidentJSON
	if code, msg := w.call(t, reviewer, "POST", path, map[string]string{"state": "false-positive", "note": "test traffic"}, &in); code != 200 || in.Triage.State != "false-positive" {
		t.Fatalf("triage: %d %s %+v", code, msg, in)
	}
	w.call(t, acme, "GET", "/api/incidents/"+ids[0], nil, &in)
	if len(in.History) != 1 || in.History[0].To != "false-positive" || in.History[0].Actor != "reviewer-user" {
		t.Fatalf("history: %+v", in.History)
	}
	if code, _ := w.call(t, viewer, "GET", "/api/nothing-here", nil, nil); code != 404 {
		t.Fatalf("unknown endpoint: %d", code)
	}
}

func TestErrorStatusTable(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{fmt.Errorf("x: %w", store.ErrNotFound), 404},
		{fmt.Errorf("x: %w", store.ErrConflict), 409},
		{fmt.Errorf("x: %w", store.ErrInvalid), 400},
		{fmt.Errorf("x: %w", ErrInvalid), 400},
		{errForbidden, 403},
		{errTooLarge, 413},
		{errUnavailable, 503},
		{errors.New("anything else"), 500},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			if got, _ := statusOf(tc.err); got != tc.want {
				t.Fatalf("%d, want %d", got, tc.want)
			}
		})
	}
}
