package rules

import (
	"errors"
	"testing"
	"time"
)

// TestIdentifyRunEnded: the token of a removed or expired run says run-ended,
// only to a user naming the run's own tenant; other failures stay as they were.
func TestIdentifyRunEnded(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	e := f.engine
	live, gone, old := MustToken(t), MustToken(t), MustToken(t)
	for _, r := range []Run{
		{ID: "r-live", Tenant: "acme", Class: "agent", TokenHash: HashToken(live)},
		{ID: "r-gone", Tenant: "acme", Class: "agent", TokenHash: HashToken(gone)},
		{ID: "r-old", Tenant: "acme", Class: "agent", TokenHash: HashToken(old), Expires: time.Now().Add(-time.Second)},
	} {
		if err := e.AddRun(r); err != nil {
			t.Fatal(err)
		}
	}
	if !e.RemoveRun("r-gone") {
		t.Fatal("r-gone not removed")
	}
	tests := []struct {
		name, user, token string
		ended             bool
		run               string
	}{
		{"live run", "acme", live, false, "r-live"},
		{"removed run", "acme", gone, true, "r-gone"},
		{"removed run, its class", "acme/agent", gone, true, "r-gone"},
		{"expired run", "acme", old, true, "r-old"},
		{"removed run, other tenant", "globex", gone, false, ""},
		{"removed run, other class", "acme/validation", gone, false, ""},
		{"expired run, other tenant", "globex", old, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := e.Identify(tc.user, tc.token)
			switch {
			case tc.ended:
				if !errors.Is(err, ErrRunEnded) || !errors.Is(err, ErrUnauthenticated) || id.Run != tc.run {
					t.Fatalf("got %+v, %v; want run %s ended", id, err, tc.run)
				}
			case tc.run != "":
				if err != nil || id.Run != tc.run {
					t.Fatalf("got %+v, %v", id, err)
				}
			default:
				if err == nil || errors.Is(err, ErrRunEnded) || id != (Identity{}) {
					t.Fatalf("got %+v, %v; want a plain authentication failure", id, err)
				}
			}
		})
	}
	if d := e.Decide(Query{Identity: Identity{Tenant: "acme", Class: "agent", Run: "r-gone"}, Host: "api.example.test", Port: 443}); d.Action != Deny || d.Reason != ReasonRunEnded {
		t.Fatalf("ended run decided %v %q", d.Action, d.Reason)
	}
}

// TestRunGrant: a grant for one run opens the host for that run only.
func TestRunGrant(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	e := f.engine
	for _, r := range []Run{
		{ID: "r-1", Tenant: "acme", Class: "agent", TokenHash: HashToken(MustToken(t))},
		{ID: "r-2", Tenant: "acme", Class: "agent", TokenHash: HashToken(MustToken(t))},
	} {
		if err := e.AddRun(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.SetGrants([]Grant{{ID: "req_9", Tenant: "acme", Run: "r-1", Entry: Entry{Host: "held.example.test", Ports: []int{443}}}}); err != nil {
		t.Fatal(err)
	}
	q := func(run string) Decision {
		return e.Decide(Query{Identity: Identity{Tenant: "acme", Class: "agent", Run: run}, Host: "held.example.test", Port: 443})
	}
	if d := q("r-1"); d.Action != Inspect || d.Entry.Origin.Grant != "req_9" || d.Entry.Origin.Run != "r-1" {
		t.Fatalf("r-1: %v %+v", d.Action, d.Entry)
	}
	for _, run := range []string{"r-2", ""} {
		if d := q(run); d.Action != Deny {
			t.Fatalf("run %q got %v through r-1's grant", run, d.Action)
		}
	}
	if err := e.SetGrants([]Grant{{ID: "req_10", Tenant: "acme", Run: "bad run!", Entry: Entry{Host: "x.example.test"}}}); err == nil {
		t.Fatal("a bad run id was granted")
	}
}

// TestReviewSettings: the class's and tenant's settings reach every Decision,
// and a passthrough host refused for its port says so.
func TestReviewSettings(t *testing.T) {
	const cfg = `
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        on_deny: hold
        passthrough:
          - host: pinned.example.test
      fast:
        on_deny: hold
        hold_timeout: 5s
      plain: {}
  globex:
    token_file: globex.token
    mode: shadow
    classes:
      agent: {}
      quiet:
        mode: enforce
`
	f := MustFixture(t, cfg, "acme", "globex")
	e := f.engine
	tests := []struct {
		id   Identity
		want Review
	}{
		{Identity{Tenant: "acme", Class: "agent"}, Review{Hold: DefaultHoldTimeout}},
		{Identity{Tenant: "acme", Class: "fast"}, Review{Hold: 5 * time.Second}},
		{Identity{Tenant: "acme", Class: "plain"}, Review{}},
		{Identity{Tenant: "globex", Class: "agent"}, Review{Shadow: true}},
		// The tenant's shadow covers every class: a class cannot opt out.
		{Identity{Tenant: "globex", Class: "quiet"}, Review{Shadow: true}},
	}
	for _, tc := range tests {
		d := e.Decide(Query{Identity: tc.id, Host: "nowhere.example.test", Port: 443})
		if d.Action != Deny || d.Review != tc.want || e.Review(tc.id.Tenant, tc.id.Class) != tc.want {
			t.Errorf("%+v: %v %+v, want %+v", tc.id, d.Action, d.Review, tc.want)
		}
	}
	acme := Identity{Tenant: "acme", Class: "agent"}
	if d := e.Decide(Query{Identity: acme, Host: "pinned.example.test", Port: 8443}); d.Action != Deny || !d.PassthroughHost {
		t.Fatalf("pinned:8443 = %v passthroughHost=%v", d.Action, d.PassthroughHost)
	}
	if d := e.Decide(Query{Identity: acme, Host: "other.example.test", Port: 443}); d.PassthroughHost {
		t.Fatal("a host no passthrough entry names is flagged")
	}
}
