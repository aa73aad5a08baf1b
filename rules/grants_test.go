package rules

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSetGrants(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	e := f.engine
	hour := time.Now().Add(time.Hour)
	err := e.SetGrants([]Grant{
		{ID: "req_1", Tenant: "acme", Entry: Entry{Host: "granted.example.test", Methods: []string{"get"}}, Expires: hour},
		{ID: "req_2", Tenant: "acme", Class: "validation", Entry: Entry{Host: "val.example.test"}, Expires: hour},
		{ID: "req_3", Tenant: "acme", Entry: Entry{Host: "old.example.test"}, Expires: time.Now().Add(-time.Second)},
		{ID: "req_4", Tenant: "acme", Entry: Entry{Host: "blind.example.test", Ports: []int{8443}}, Passthrough: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		id     Identity
		host   string
		port   int
		method string
		stage  Stage
		want   Action
		reason string
		grant  string
	}{
		{"granted connect", acmeAgent, "granted.example.test", 443, "", StageConnect, Inspect, "", "req_1"},
		{"granted request", acmeAgent, "granted.example.test", 443, "GET", StageRequest, Allow, "", "req_1"},
		{"granted method narrows", acmeAgent, "granted.example.test", 443, "POST", StageRequest, Deny, ReasonMethodNotAllowed, ""},
		{"granted port narrows", acmeAgent, "granted.example.test", 22, "", StageConnect, Deny, ReasonPortNotAllowed, ""},
		{"other tenant never", globexAgent, "granted.example.test", 443, "", StageConnect, Deny, ReasonHostNotAllowed, ""},
		{"class-bound grant, other class", acmeAgent, "val.example.test", 443, "", StageConnect, Deny, ReasonHostNotAllowed, ""},
		{"class-bound grant, its class", acmeValidation, "val.example.test", 443, "", StageConnect, Inspect, "", "req_2"},
		{"all-class grant in another class", acmeValidation, "granted.example.test", 443, "", StageConnect, Inspect, "", "req_1"},
		{"expired grant", acmeAgent, "old.example.test", 443, "", StageConnect, Deny, ReasonHostNotAllowed, ""},
		{"passthrough grant", acmeAgent, "blind.example.test", 8443, "", StageConnect, Passthrough, "", "req_4"},
		{"config still first", acmeAgent, "api.example.test", 443, "", StageConnect, Inspect, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := e.Decide(Query{Identity: tc.id, Host: tc.host, Port: tc.port, Method: tc.method, Path: "/", Stage: tc.stage})
			if d.Action != tc.want || d.Reason != tc.reason {
				t.Fatalf("got %v %q, want %v %q", d.Action, d.Reason, tc.want, tc.reason)
			}
			if tc.grant != "" {
				if d.Entry.Origin.Kind != OriginGrant || d.Entry.Origin.Grant != tc.grant {
					t.Fatalf("origin %+v, want grant %s", d.Entry.Origin, tc.grant)
				}
				if got := d.Entry.Origin.String(); got != "grant "+tc.grant {
					t.Fatalf("provenance %q", got)
				}
			}
		})
	}
	if got := len(e.Grants()); got != 3 {
		t.Fatalf("Grants() = %d in force, want 3 (the expired one left out)", got)
	}

	// Replacing the set withdraws what it no longer holds, at once.
	if err := e.SetGrants(nil); err != nil {
		t.Fatal(err)
	}
	d := e.Decide(Query{Identity: acmeAgent, Host: "granted.example.test", Port: 443, Stage: StageConnect})
	if d.Action != Deny {
		t.Fatalf("after SetGrants(nil): %v, want deny", d.Action)
	}
}

func TestSetGrantsExpiresLive(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	exp := time.Now().Add(150 * time.Millisecond)
	if err := f.engine.SetGrants([]Grant{{ID: "req_x", Tenant: "acme", Entry: Entry{Host: "brief.example.test"}, Expires: exp}}); err != nil {
		t.Fatal(err)
	}
	q := Query{Identity: acmeAgent, Host: "brief.example.test", Port: 443, Stage: StageConnect}
	if d := f.engine.Decide(q); d.Action != Inspect {
		t.Fatalf("before expiry: %v", d.Action)
	}
	time.Sleep(time.Until(exp) + 10*time.Millisecond)
	if d := f.engine.Decide(q); d.Action != Deny {
		t.Fatalf("after expiry: %v, want deny without any SetGrants call", d.Action)
	}
}

func TestSetGrantsRefuses(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	good := Grant{ID: "req_ok", Tenant: "acme", Entry: Entry{Host: "ok.example.test"}}
	tests := []struct {
		name string
		g    Grant
		want string
	}{
		{"preset", Grant{ID: "req_p", Tenant: "acme", Entry: Entry{Preset: "npm"}}, "preset"},
		{"allow_addresses", Grant{ID: "req_a", Tenant: "acme", Entry: Entry{Host: "x.example.test", AllowAddresses: []string{"10.0.0.1"}}}, "allow_addresses"},
		{"bad host", Grant{ID: "req_h", Tenant: "acme", Entry: Entry{Host: "*.com"}}, "req_h"},
		{"no tenant", Grant{ID: "req_t", Entry: Entry{Host: "x.example.test"}}, "tenant"},
		{"bad class", Grant{ID: "req_c", Tenant: "acme", Class: "Bad Class", Entry: Entry{Host: "x.example.test"}}, "class"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := f.engine.SetGrants([]Grant{tc.g, good})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
			// The bad grant grants nothing; the good one still applies.
			if ids := f.engine.Grants(); len(ids) != 1 || ids[0].ID != "req_ok" {
				t.Fatalf("grants in force: %+v", ids)
			}
			if tc.g.Entry.Host != "" {
				d := f.engine.Decide(Query{Identity: acmeAgent, Host: tc.g.Entry.Host, Port: 443, Stage: StageConnect})
				if d.Action != Deny {
					t.Fatalf("bad grant let %s through", tc.g.Entry.Host)
				}
			}
		})
	}
}

func TestGrantsSurviveReload(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	if err := f.engine.SetGrants([]Grant{{ID: "req_r", Tenant: "acme", Entry: Entry{Host: "kept.example.test"}}}); err != nil {
		t.Fatal(err)
	}
	next, err := Compile(f.pol, f.token)
	if err != nil {
		t.Fatal(err)
	}
	q := Query{Identity: acmeAgent, Host: "kept.example.test", Port: 443, Stage: StageConnect}
	if d := next.Decide(q); d.Action != Deny {
		t.Fatal("a fresh engine has grants it was never given")
	}
	next.ShareRuns(f.engine)
	if d := next.Decide(q); d.Action != Inspect {
		t.Fatalf("after ShareRuns: %v, want the grant carried over", d.Action)
	}
	// Shared, not copied: a later SetGrants on the new engine reaches both.
	next.SetGrants(nil)
	if d := f.engine.Decide(q); d.Action != Deny {
		t.Fatal("grant table was copied, not shared")
	}
}

func TestGrantsConcurrent(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	q := Query{Identity: acmeAgent, Host: "race.example.test", Port: 443, Stage: StageConnect}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					f.engine.Decide(q)
				}
			}
		})
	}
	for i := range 200 {
		var gs []Grant
		if i%2 == 0 {
			gs = []Grant{{ID: "req_c", Tenant: "acme", Entry: Entry{Host: "race.example.test"}}}
		}
		f.engine.SetGrants(gs)
	}
	close(stop)
	wg.Wait()
}
