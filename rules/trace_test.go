package rules

import (
	"strings"
	"testing"
)

// TestTrace: a trace ends at the entry Decide chose, with its origin, and
// says for every entry before it what did not fit; a refusal has no match.
func TestTrace(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	e := f.engine
	if err := e.AddRun(Run{ID: "r-1", Tenant: "acme", Class: "agent", TokenHash: HashToken(MustToken(t)),
		Entries: []Entry{{Host: "extra.example.test"}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.SetGrants([]Grant{{ID: "ar_1", Tenant: "acme", Run: "r-1", Entry: Entry{Host: "granted.example.test"}}}); err != nil {
		t.Fatal(err)
	}
	run := Identity{Tenant: "acme", Class: "agent", Run: "r-1"}
	tests := []struct {
		name    string
		q       Query
		origin  string // "" for a refusal
		whySome string // a Why some step must hold
	}{
		{"config entry", Query{Identity: acmeAgent, Host: "api.example.test", Port: 443, Stage: StageConnect}, "sluice.yaml:", ""},
		{"passthrough first", Query{Identity: acmeAgent, Host: "pinned.example.test", Port: 443, Stage: StageConnect}, "sluice.yaml:", ""},
		{"method refused", Query{Identity: acmeAgent, Host: "x.cdn.example.test", Port: 443, Method: "POST", Path: "/", Stage: StageRequest}, "", "method POST not in [GET]"},
		{"path refused", Query{Identity: acmeAgent, Host: "paths.example.test", Port: 443, Method: "GET", Path: "/admin", Stage: StageRequest}, "", `path "/admin" not under [/v1/ /static/]`},
		{"port refused", Query{Identity: acmeAgent, Host: "both.example.test", Port: 22, Stage: StageConnect}, "", "port 22 not in"},
		{"run extra", Query{Identity: run, Host: "extra.example.test", Port: 443, Stage: StageConnect}, "run r-1 extra", ""},
		{"run grant", Query{Identity: run, Host: "granted.example.test", Port: 443, Stage: StageConnect}, "grant ar_1", ""},
		{"grant not for another run", Query{Identity: acmeAgent, Host: "granted.example.test", Port: 443, Stage: StageConnect}, "", "host granted.example.test is not api.example.test"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := e.Trace(tc.q)
			d := e.Decide(tc.q)
			if tr.Decision.Action != d.Action || tr.Decision.Reason != d.Reason {
				t.Fatalf("trace decision %v %q, Decide %v %q", tr.Decision.Action, tr.Decision.Reason, d.Action, d.Reason)
			}
			var matched []TraceStep
			for _, s := range tr.Steps {
				if s.Matched {
					matched = append(matched, s)
				} else if s.Why == "" {
					t.Errorf("a step neither matched nor says why: %+v", s)
				}
			}
			if tc.origin == "" {
				if len(matched) != 0 || d.Action != Deny {
					t.Fatalf("refusal with a match: %+v", matched)
				}
			} else if len(matched) != 1 || !strings.HasPrefix(matched[0].Origin, tc.origin) || !tr.Steps[len(tr.Steps)-1].Matched {
				t.Fatalf("matched %+v, want origin %q", matched, tc.origin)
			} else if matched[0].Origin != d.Entry.Origin.String() {
				t.Fatalf("trace matched %q, Decide chose %q", matched[0].Origin, d.Entry.Origin.String())
			}
			if tc.whySome != "" {
				found := false
				for _, s := range tr.Steps {
					found = found || strings.Contains(s.Why, tc.whySome)
				}
				if !found {
					t.Fatalf("no step says %q: %+v", tc.whySome, tr.Steps)
				}
			}
		})
	}
	e.RemoveRun("r-1")
	if tr := e.Trace(Query{Identity: run, Host: "extra.example.test", Port: 443, Stage: StageConnect}); tr.RunState != "ended" || tr.Decision.Reason != ReasonRunEnded {
		t.Fatalf("ended run: %+v", tr)
	}
	// Another tenant's trace holds none of acme's entries.
	for _, s := range e.Trace(Query{Identity: globexAgent, Host: "api.example.test", Port: 443, Stage: StageConnect}).Steps {
		if strings.Contains(s.Entry.Host, "example.test") && !strings.Contains(s.Entry.Host, "globex") {
			t.Fatalf("globex's trace shows %q", s.Entry.Host)
		}
	}
}
