package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

// scopedWorld is a page world with a tenant-scoped reviewer "gil" (globex)
// and incidents and runs of both tenants.
func scopedWorld(t *testing.T) (*pageWorld, store.Run) {
	t.Helper()
	w := mustPageWorld(t, func(o *Options) {
		o.Users = append(o.Users, User{Name: "gil", Role: RoleAdmin, Tenant: "globex", Hash: mustHash(t, worldPassword)})
	})
	now := time.Now().UTC()
	var ins []incident.Incident
	for i := range 20 {
		ins = append(ins, incident.Incident{ID: fmt.Sprintf("inc_acme%02d", i), Time: now.Add(-time.Duration(i+1) * time.Minute),
			Tenant: "acme", Kind: "secret", Reason: "secret-detected", Action: "block", Host: "paste.example.test",
			Path: "/upload", Rule: "github-pat", Fingerprint: "fp-acme", Run: "run_acme"})
	}
	ins = append(ins, incident.Incident{ID: "inc_globex", Time: now.Add(-time.Minute), Tenant: "globex", Kind: "deny",
		Reason: "host-not-allowed", Action: "block", Host: "globex-elsewhere.example.test", Port: 443})
	w.insert(ins...)
	run, err := w.store.CreateRun(context.Background(), store.Run{ID: "run_acme", Tenant: "acme", Class: "agent",
		TokenHash: "hash-acme", Expires: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return w, run
}

func TestTenantScopedUserSeesOnlyItsTenant(t *testing.T) {
	w, _ := scopedWorld(t)
	c := w.client()
	csrf := c.mustLogin("gil")
	for _, path := range []string{"/incidents", "/incidents?group=fingerprint", "/incidents?q=paste", "/", "/runs?state=all",
		"/rules", "/audit", "/access?state=all", "/policy", "/timeline?host=paste.example.test"} {
		r := c.get(path)
		if r.code != http.StatusOK {
			t.Fatalf("%s: %d", path, r.code)
		}
		for _, leak := range []string{"inc_acme", "paste.example.test</a>", "fp-acme", "run_acme", "github-pat", "acme</td>", ">acme ("} {
			if strings.Contains(r.body, leak) {
				t.Errorf("%s shows %q to a globex user", path, leak)
			}
		}
	}
	if r := c.get("/incidents"); !strings.Contains(r.body, "inc_globex") {
		t.Fatal("the scoped user does not see its own incident")
	}
	// URL guessing: another tenant's rows are not found, as if absent.
	for _, path := range []string{"/incidents/inc_acme01", "/incidents/inc_acme01/har", "/runs/run_acme",
		"/incidents?tenant=acme", "/timeline?host=paste.example.test&tenant=acme", "/?tenant=acme", "/audit?tenant=acme"} {
		if r := c.get(path); r.code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, r.code)
		}
	}
	// Writes too: triage, bulk triage (by id and by group), ending a run.
	for _, x := range []struct {
		path string
		form url.Values
	}{
		{"/incidents/inc_acme01/triage", url.Values{"state": {"resolved"}}},
		{"/incidents/bulk", url.Values{"state": {"resolved"}, "id": {"inc_globex", "inc_acme01"}}},
		{"/incidents/bulk", url.Values{"state": {"resolved"}, "by": {"fingerprint"}, "group": {"fp-acme"}, "filter": {"tenant=acme"}}},
		{"/runs/run_acme/end", url.Values{}},
	} {
		x.form.Set("csrf", csrf)
		if r := c.do("POST", x.path, x.form); r.code != http.StatusNotFound && r.code != http.StatusBadRequest {
			t.Errorf("POST %s: %d, want 404", x.path, r.code)
		}
	}
	// A group of the other tenant's, asked for without a tenant, is empty for gil.
	r := c.do("POST", "/incidents/bulk", url.Values{"csrf": {csrf}, "state": {"resolved"}, "by": {"fingerprint"}, "group": {"fp-acme"}})
	if r.code != http.StatusBadRequest {
		t.Errorf("bulk of another tenant's group: %d", r.code)
	}
	if n, _ := w.store.CountIncidents(context.Background(), store.IncidentFilter{Tenant: "acme", Triage: incident.TriageNew}); n != 20 {
		t.Fatalf("a scoped user changed another tenant's incidents: %d new left", n)
	}
	if run, _ := w.store.GetRun(context.Background(), "run_acme"); !run.Ended.IsZero() {
		t.Fatal("a scoped user ended another tenant's run")
	}
	// Another tenant's proposal cannot be closed by guessing its id.
	prop, err := w.store.CreateProposal(context.Background(), store.Proposal{Tenant: "acme", Kind: store.ProposalRuleAllowlist,
		Rule: "github-pat", Host: "paste.example.test", Reason: "fixture", Actor: "rex", IncidentID: "inc_acme01"})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.do("POST", "/proposals/"+prop.ID+"/close", url.Values{"csrf": {csrf}, "note": {"x"}}); r.code != http.StatusNotFound {
		t.Errorf("close another tenant's proposal: %d", r.code)
	}
	if ps, _ := w.store.ListProposals(context.Background(), store.ProposalFilter{State: store.ProposalOpen}); len(ps) != 1 {
		t.Error("a scoped user closed another tenant's proposal")
	}
	if _, err := w.store.AppendAudit(context.Background(), store.AuditEntry{Actor: "rex", Action: "test.acme", Tenant: "acme", Target: "inc_acme01"}); err != nil {
		t.Fatal(err)
	}
	// The API with the same user (Basic) is scoped the same way.
	api := func(path string) resp {
		req := c.do("GET", "/api"+path, nil, "Authorization", basicAuth("gil", worldPassword))
		return req
	}
	if r := api("/incidents"); r.code != 200 || strings.Contains(r.body, "inc_acme") || !strings.Contains(r.body, "inc_globex") {
		t.Errorf("API listing: %d %s", r.code, r.body)
	}
	if r := api("/audit"); r.code != 200 || strings.Contains(r.body, "acme") {
		t.Errorf("API audit shows another tenant's entries: %d %s", r.code, r.body)
	}
	if r := c.do("POST", "/api/runs", nil, "Authorization", basicAuth("gil", worldPassword)); r.code == http.StatusCreated {
		t.Error("a scoped admin created a run with no tenant")
	}
	for _, body := range []string{`{"tenant":"acme","class":"agent"}`, `{"tenant":"acme","host":"x.example.test","justification":"j"}`} {
		path := "/api/runs"
		if strings.Contains(body, "host") {
			path = "/api/access-requests"
		}
		req, _ := http.NewRequest("POST", w.srv.URL+path, strings.NewReader(body))
		req.SetBasicAuth("gil", worldPassword)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s for acme as a globex admin: %d, want 403", path, res.StatusCode)
		}
	}
	for _, path := range []string{"/incidents?tenant=acme", "/incidents/inc_acme01", "/runs/run_acme", "/runs?tenant=acme", "/audit?tenant=acme"} {
		if r := api(path); r.code != http.StatusNotFound && r.code != http.StatusForbidden {
			t.Errorf("API %s: %d", path, r.code)
		}
	}
}

func basicAuth(user, pw string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, pw)
	return req.Header.Get("Authorization")
}

func TestTriagePages(t *testing.T) {
	w, _ := scopedWorld(t)
	c := w.client()
	csrf := c.mustLogin("rex")
	// Search is partial; filters are choices with counts; reasons show.
	r := c.get("/incidents?q=PASTE.example")
	if n := strings.Count(listTable(r.body), `<a href="/incidents/inc_`); n != 20 {
		t.Fatalf("search: %d rows", n)
	}
	for _, want := range []string{`<option value="github-pat">github-pat (20)</option>`, `<option value="host-not-allowed">`,
		`class="reason r-secret-detected"`, `href="/incidents?dir=asc&amp;sort=host"`} {
		if !strings.Contains(r.body, want) && !strings.Contains(c.get("/incidents").body, want) {
			t.Errorf("listing without %s", want)
		}
	}
	// Twenty identical rows are one group; triaging the group takes one note.
	r = c.get("/incidents?group=fingerprint")
	if !strings.Contains(r.body, `value="fp-acme"`) || !strings.Contains(r.body, `<td class="num">20</td>`) {
		t.Fatalf("groups:\n%s", r.body)
	}
	r = c.do("POST", "/incidents/bulk", url.Values{"csrf": {csrf}, "state": {"false-positive"}, "note": {"fixture tokens"},
		"by": {"fingerprint"}, "group": {"fp-acme"}, "filter": {"tenant=acme"}})
	if r.code != http.StatusSeeOther || r.hdr.Get("Location") != "/incidents?group=fingerprint&tenant=acme" {
		t.Fatalf("bulk: %d %s %s", r.code, r.hdr.Get("Location"), r.body)
	}
	if n, _ := w.store.CountIncidents(context.Background(), store.IncidentFilter{Triage: incident.TriageFalsePositive, Search: "fixture tokens"}); n != 20 {
		t.Fatalf("after group triage: %d", n)
	}
	// A false positive without a note is refused, in bulk as alone.
	r = c.do("POST", "/incidents/bulk", url.Values{"csrf": {csrf}, "state": {"false-positive"}, "id": {"inc_globex"}})
	if r.code != http.StatusBadRequest {
		t.Fatalf("bulk false positive without a note: %d", r.code)
	}
	// A viewer may not triage in bulk.
	v := w.client()
	vcsrf := v.mustLogin("vera")
	if r := v.do("POST", "/incidents/bulk", url.Values{"csrf": {vcsrf}, "state": {"resolved"}, "id": {"inc_globex"}}); r.code != http.StatusForbidden {
		t.Fatalf("viewer bulk: %d", r.code)
	}
	// The overview counts what needs attention.
	r = c.get("/")
	for _, want := range []string{`<b id="n-new">1</b>`, `<b id="n-rising">1</b>`, "github-pat 0→20"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("overview without %s", want)
		}
	}
	// Runs page and run page.
	if r := c.get("/runs"); !strings.Contains(r.body, `<a href="/runs/run_acme">`) || !strings.Contains(r.body, ">20</a>") {
		t.Errorf("runs page:\n%s", r.body)
	}
	if r := c.get("/runs/run_acme"); r.code != 200 || !strings.Contains(r.body, "run-incidents") {
		t.Errorf("run page: %d", r.code)
	}
	// A deny incident offers an access request for its host, prefilled.
	r = c.get("/incidents/inc_globex")
	if !strings.Contains(r.body, `id="request-access"`) || !strings.Contains(r.body, "globex-elsewhere.example.test") {
		t.Fatal("no access request form on a deny incident")
	}
	if r := c.get("/incidents/inc_acme01"); strings.Contains(r.body, `id="request-access"`) {
		t.Fatal("an access request form on a secret incident")
	}
	r = c.do("POST", "/incidents/inc_globex/request-access", url.Values{"csrf": {csrf}, "justification": {"the docs build needs it"}, "ttl": {"24h"}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("request access: %d %s", r.code, r.body)
	}
	reqs, err := w.store.ListAccessRequests(context.Background(), store.AccessFilter{Tenant: "globex", State: store.AccessPending})
	if err != nil || len(reqs) != 1 || reqs[0].Host != "globex-elsewhere.example.test" || len(reqs[0].Ports) != 1 ||
		!strings.Contains(reqs[0].Justification, "inc_globex") {
		t.Fatalf("filed: %+v %v", reqs, err)
	}
	// The request shows the refused attempts behind it; once approved, the
	// policy page shows the grant with its provenance.
	if r := c.get("/access"); !strings.Contains(r.body, "1 blocked attempts") {
		t.Errorf("access page without the blocked attempts:\n%s", r.body)
	}
	r = c.do("POST", "/access/"+reqs[0].ID+"/decide", url.Values{"csrf": {csrf}, "decision": {"approve"}, "reason": {"ok for docs"}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", r.code, r.body)
	}
	if r := c.get("/policy?tenant=globex"); !strings.Contains(r.body, "grant "+reqs[0].ID) || !strings.Contains(r.body, "globex-elsewhere.example.test") {
		t.Errorf("policy page without the grant and its origin:\n%s", r.body)
	}
	// Timelines of a host and of a run.
	for _, path := range []string{"/timeline?host=paste.example.test", "/timeline?run=run_acme"} {
		if r := c.get(path); r.code != 200 || strings.Count(r.body, `<a href="/incidents/inc_acme`) != 20 {
			t.Errorf("%s: %d", path, r.code)
		}
	}
}

func TestExfilLinkShowsItsDestination(t *testing.T) {
	w := mustPageWorld(t)
	now := time.Now().UTC()
	link := func(id, host string) incident.Incident {
		return incident.Incident{ID: id, Time: now, Tenant: "acme", Kind: "exfil-link", Reason: "exfil-link", Action: "block",
			Host: "llm.example.test", Rule: "exfil-link", Snippet: "https://" + host + "/… (query, ht…xy)"}
	}
	w.insert(link("inc_l1", "drop.evil.test"), link("inc_l2", "drop.evil.test"), link("inc_l3", "other.evil.test"))
	c := w.client()
	c.mustLogin("vera")
	r := c.get("/incidents/inc_l1")
	for _, want := range []string{`id="link-host">drop.evil.test<`, `id="link-part">query<`, "Same destination", `href="/incidents/inc_l2"`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("exfil incident page without %s", want)
		}
	}
	if strings.Contains(r.body, `href="/incidents/inc_l3"`) {
		t.Error("another destination listed as the same")
	}
}

// A run's own entries show on its page and on the policy page, with the
// provenance `sluice policy explain` gives them.
func TestRunEntriesShown(t *testing.T) {
	w := mustPageWorld(t)
	tok := "run-token-for-the-test-0123456789"
	if err := w.engine.AddRun(rules.Run{ID: "run_01OWN", Tenant: "acme", Class: "agent", TokenHash: rules.HashToken(tok),
		Entries: []rules.Entry{{Host: "own.example.test", Methods: []string{"GET"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.CreateRun(context.Background(), store.Run{ID: "run_01OWN", Tenant: "acme", Class: "agent",
		TokenHash: "hash-own", Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	c := w.client()
	c.mustLogin("vera")
	for _, path := range []string{"/runs/run_01OWN", "/policy?tenant=acme"} {
		r := c.get(path)
		if !strings.Contains(r.body, "own.example.test") || !strings.Contains(r.body, "run run_01OWN extra") {
			t.Errorf("%s without the run's entry and its origin", path)
		}
	}
	if r := c.get("/policy?tenant=globex"); strings.Contains(r.body, "own.example.test") {
		t.Error("another tenant's policy shows the run's entry")
	}
}
