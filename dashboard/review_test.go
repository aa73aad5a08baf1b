package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// reviewWorld is the page world with a live queue and a runs service that
// keeps access contexts, publishing to the queue as cmd wires it.
func reviewWorld(t *testing.T) (*pageWorld, *runs.Service) {
	t.Helper()
	q := &Queue{}
	var svc *runs.Service
	w := mustPageWorld(t, func(o *Options) {
		o.Queue = q
		svc = o.Runs.(*runs.Service)
		svc.Review = runstore.New(o.Store)
		svc.OnAccess = func(x runs.AccessRequest, c runs.AccessContext) {
			q.Publish(QueueEventOf(store.AccessRequest(x), store.AccessContext(c)))
		}
	})
	return w, svc
}

const hostileReason = `<img src=x onerror=alert(1)><script>document.title='pwned'</script>`

func file(t *testing.T, svc *runs.Service, tenant, run, host string) runs.Filed {
	t.Helper()
	f, err := svc.FileAccess(context.Background(), runs.Filing{Tenant: tenant, Class: "agent", Run: run, Host: host,
		Ports: []int{443}, Reason: hostileReason})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The live queue streams every filing to staff, and to a tenant only its own.
func TestQueueEvents(t *testing.T) {
	w, svc := reviewWorld(t)
	open := func(auth func(*http.Request)) (*bufio.Reader, func()) {
		req, _ := http.NewRequest("GET", w.srv.URL+"/api/access-requests/events", nil)
		auth(req)
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return bufio.NewReader(resp.Body), func() { cancel(); resp.Body.Close() }
	}
	next := func(r *bufio.Reader) QueueEvent {
		t.Helper()
		done := make(chan QueueEvent, 1)
		go func() {
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					close(done)
					return
				}
				if data, ok := strings.CutPrefix(line, "data: "); ok {
					var ev QueueEvent
					json.Unmarshal([]byte(data), &ev)
					done <- ev
					return
				}
			}
		}()
		select {
		case ev := <-done:
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return QueueEvent{}
	}
	staff, stop1 := open(func(r *http.Request) { r.SetBasicAuth("vera", worldPassword) })
	defer stop1()
	globex, stop2 := open(func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer globex:"+w.tenantTokens["globex"])
	})
	defer stop2()
	time.Sleep(100 * time.Millisecond) // both subscribed
	a := file(t, svc, "acme", "r-1", "one.example.test")
	g := file(t, svc, "globex", "r-2", "two.example.test")
	if ev := next(staff); ev.ID != a.Request.ID || ev.Run != "r-1" || ev.Justification != hostileReason || ev.State != "pending" {
		t.Fatalf("staff first event %+v", ev)
	}
	if ev := next(staff); ev.ID != g.Request.ID {
		t.Fatalf("staff second event %+v", ev)
	}
	if ev := next(globex); ev.ID != g.Request.ID || ev.Tenant != "globex" {
		t.Fatalf("globex saw %+v (acme's request must never reach it)", ev)
	}
	// No principal: no stream.
	resp, err := http.Get(w.srv.URL + "/api/access-requests/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("anonymous stream: %d", resp.StatusCode)
	}
}

// The review page lists pending requests (their reasons as text) and a
// reviewer approves with a scope; a viewer cannot.
func TestReviewPage(t *testing.T) {
	w, svc := reviewWorld(t)
	f := file(t, svc, "acme", "r-1", "held.example.test")
	c := w.client()
	csrf := c.mustLogin("rex")
	page := c.get("/review")
	if page.code != 200 || !strings.Contains(page.body, `id="q-`+f.Request.ID+`"`) {
		t.Fatalf("review page %d:\n%s", page.code, page.body)
	}
	if strings.Contains(page.body, hostileReason) || !strings.Contains(page.body, "&lt;img src=x") {
		t.Fatal("the reason is not escaped")
	}
	if !strings.Contains(page.body, `<script src="/static/review.js"></script>`) {
		t.Fatal("no live queue script")
	}
	viewer := w.client()
	vcsrf := viewer.mustLogin("vera")
	if r := viewer.do("POST", "/review/"+f.Request.ID, url.Values{"csrf": {vcsrf}, "decision": {"approve"}}); r.code != 403 {
		t.Fatalf("viewer approved: %d", r.code)
	}
	r := c.do("POST", "/review/"+f.Request.ID, url.Values{"csrf": {csrf}, "decision": {"approve"}, "scope": {"class"},
		"ttl": {"2h"}, "methods": {"GET, HEAD"}, "paths": {"/docs/"}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", r.code, r.body)
	}
	x, _ := w.store.GetAccessRequest(context.Background(), f.Request.ID)
	ctx, _ := w.store.GetAccessContext(context.Background(), f.Request.ID)
	if x.State != store.AccessApproved || ctx.Scope != store.ScopeClass || len(x.Methods) != 2 || x.Paths[0] != "/docs/" ||
		x.ExpiresAt.After(time.Now().Add(3*time.Hour)) {
		t.Fatalf("approved %+v %+v", x, ctx)
	}
	// Denial needs a note, through the API too.
	g := file(t, svc, "acme", "r-1", "nope.example.test")
	for _, tc := range []struct {
		body string
		code int
	}{
		{`{"approve": false}`, 400},
		{`{"approve": true, "scope": "galaxy"}`, 400},
		{`{"approve": true, "ttl": "1h", "permanent": true}`, 400},
		{`{"approve": false, "note": "use the mirror"}`, 200},
	} {
		req, _ := http.NewRequest("POST", w.srv.URL+"/api/access-requests/"+g.Request.ID+"/review", strings.NewReader(tc.body))
		req.SetBasicAuth("rex", worldPassword)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d, want %d", tc.body, resp.StatusCode, tc.code)
		}
	}
	// A tenant token may not decide, not even its own tenant's request.
	req, _ := http.NewRequest("POST", w.srv.URL+"/api/access-requests/"+f.Request.ID+"/review", strings.NewReader(`{"approve": true}`))
	req.Header.Set("Authorization", "Bearer acme:"+w.tenantTokens["acme"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("tenant review: %d", resp.StatusCode)
	}
}

// The propose page drafts from the store.
func TestProposePage(t *testing.T) {
	w, _ := reviewWorld(t)
	now := time.Now()
	if err := w.store.RecordObservations(context.Background(), []store.Observation{{Tenant: "acme", Class: "agent", Run: "r-1",
		Host: "docs.example.test", Port: 443, Method: "GET", Path: "/v1/", Verdict: store.ObservedAllowed, Count: 4,
		FirstSeen: now, LastSeen: now}}, 0); err != nil {
		t.Fatal(err)
	}
	c := w.client()
	c.mustLogin("vera")
	r := c.get("/policy/propose?tenant=acme&since=1d")
	if r.code != 200 || !strings.Contains(r.body, `- host: &#34;docs.example.test&#34;`) || !strings.Contains(r.body, "token_env: &#34;SLUICE_ACME_TOKEN&#34;") {
		t.Fatalf("propose page %d:\n%s", r.code, r.body)
	}
	if r := c.get("/policy/propose?tenant=acme&since=forever"); r.code != 400 {
		t.Fatalf("bad since: %d", r.code)
	}
}

// The incident page shows the decision trace; the API returns it, to the
// incident's own tenant only.
func TestIncidentTrace(t *testing.T) {
	w, _ := reviewWorld(t)
	w.insert(incident.Incident{ID: "inc_tr", Time: time.Now(), Tenant: "acme", Class: "agent", Kind: "deny",
		Reason: "method-not-allowed", Action: "block", Host: "x.pkg.example.test", Port: 443, Method: "POST", Path: "/upload"})
	c := w.client()
	c.mustLogin("vera")
	page := c.get("/incidents/inc_tr")
	if page.code != 200 || !strings.Contains(page.body, `id="trace"`) || !strings.Contains(page.body, "method POST not in [GET]") ||
		!strings.Contains(page.body, "host x.pkg.example.test is not api.github.test") {
		t.Fatalf("incident page %d:\n%s", page.code, page.body)
	}
	get := func(auth func(*http.Request)) (int, traceView) {
		req, _ := http.NewRequest("GET", w.srv.URL+"/api/incidents/inc_tr/trace", nil)
		auth(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v traceView
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	code, v := get(func(r *http.Request) { r.Header.Set("Authorization", "Bearer acme:"+w.tenantTokens["acme"]) })
	if code != 200 || v.Action != "deny" || v.Reason != "method-not-allowed" || len(v.Steps) != 2 || v.Steps[1].Why != "method POST not in [GET]" {
		t.Fatalf("trace %d %+v", code, v)
	}
	if code, _ := get(func(r *http.Request) { r.Header.Set("Authorization", "Bearer globex:"+w.tenantTokens["globex"]) }); code != 404 {
		t.Fatalf("another tenant's trace: %d", code)
	}
}
