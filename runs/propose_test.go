package runs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
)

// day is a recorded day of mixed traffic of tenant acme.
func day() []runs.Observed {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	o := func(run, host string, port int, method, path, verdict string, n int64, h int) runs.Observed {
		at := t0.Add(time.Duration(h) * time.Hour)
		return runs.Observed{Class: "agent", Run: run, Host: host, Port: port, Method: method, Path: path, Verdict: verdict,
			Count: n, First: at, Last: at.Add(time.Minute)}
	}
	var out []runs.Observed
	out = append(out,
		o("r-1", "api.example.test", 443, "GET", "/v1/repos/a/", runs.VerdictAllowed, 10, 0),
		o("r-1", "api.example.test", 443, "GET", "/v1/repos/b/", runs.VerdictAllowed, 5, 1),
		o("r-2", "api.example.test", 443, "GET", "/v1/repos/c/", runs.VerdictAllowed, 3, 2),
		o("r-2", "api.example.test", 443, "GET", "/v1/repos/d/", runs.VerdictAllowed, 1, 3),
		o("r-2", "api.example.test", 443, "POST", "/v1/issues", runs.VerdictAllowed, 2, 3),
		o("r-1", "pypi.org", 443, "GET", "/simple/requests/", runs.VerdictAllowed, 40, 0),
		o("r-3", "pastebin.com", 443, "POST", "/api/api_post.php", runs.VerdictWouldRefuse, 1, 4),
		o("r-3", "blind.example.test", 8443, "CONNECT", "", runs.VerdictAllowed, 2, 4),
		o("r-3", "evil.example.test", 443, "GET", "/x", runs.VerdictRefused, 7, 5),
		o("r-1", "other.example.test", 443, "GET", "/a", runs.VerdictAllowed, 1, 6),
		o("r-1", "other.example.test", 443, "GET", "/b", runs.VerdictAllowed, 1, 6),
	)
	for _, l := range []string{"a", "b", "c", "d"} {
		out = append(out, o("r-1", l+".cdn.example.test", 443, "GET", "/assets/", runs.VerdictAllowed, 2, 1))
	}
	// Only two hosts under one parent: no wildcard.
	out = append(out, o("r-2", "x.two.example.test", 443, "GET", "/", runs.VerdictAllowed, 1, 1),
		o("r-2", "y.two.example.test", 443, "GET", "/", runs.VerdictAllowed, 1, 1))
	// Another class is left out with --class agent.
	out = append(out, runs.Observed{Class: "validation", Run: "r-9", Host: "val.example.test", Port: 443, Method: "GET", Path: "/", Verdict: runs.VerdictAllowed, Count: 1})
	return out
}

// TestPropose: the draft of a day of traffic is a config that `config check`
// would accept, that accepts exactly what was allowed or would have been
// refused in shadow mode, and nothing broader than its collapsing.
func TestPropose(t *testing.T) {
	obs := day()
	p := runs.Propose(runs.ProposeInput{Tenant: "acme", Class: "agent", Observed: obs})
	if len(p.Classes) != 1 || p.Classes[0].Name != "agent" {
		t.Fatalf("classes %+v", p.Classes)
	}
	c := p.Classes[0]
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "acme.token")
	tok, _ := rules.NewToken()
	os.WriteFile(tokenFile, []byte(tok), 0o600)
	y := p.YAML(runs.YAMLOptions{TokenFile: tokenFile, Header: []string{"drafted for a test\nwith a newline"}})
	cfg, err := config.Parse(y, "proposed.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("draft does not check: %v\n%s", err, y)
	}
	e, err := rules.Compile(cfg.Policy(), cfg.Token)
	if err != nil {
		t.Fatal(err)
	}
	id := rules.Identity{Tenant: "acme", Class: "agent"}
	decide := func(host string, port int, method, path string) rules.Action {
		st := rules.StageRequest
		if method == "CONNECT" {
			st = rules.StageConnect
		}
		return e.Decide(rules.Query{Identity: id, Host: host, Port: port, Method: method, Path: path, Stage: st}).Action
	}
	for _, o := range obs {
		if o.Class != "agent" {
			continue
		}
		path := o.Path
		if strings.HasSuffix(path, "/") {
			path += "x" // an observed prefix stands for the paths below it
		}
		got := decide(o.Host, o.Port, o.Method, path)
		if o.Verdict == runs.VerdictRefused {
			if got != rules.Deny {
				t.Errorf("refused %s %s%s is proposed", o.Method, o.Host, o.Path)
			}
			continue
		}
		want := rules.Allow
		if o.Method == "CONNECT" {
			want = rules.Passthrough
		}
		if got != want {
			t.Errorf("replay %s %s:%d%s: %v, want %v\n%s", o.Method, o.Host, o.Port, o.Path, got, want, y)
		}
	}
	for _, no := range []struct {
		host   string
		port   int
		method string
		path   string
	}{
		{"api.example.test", 443, "DELETE", "/v1/repos/a/"}, // a method never used
		{"api.example.test", 443, "POST", "/v1/repos/a/"},   // POST only where it was used
		{"api.example.test", 443, "GET", "/v2/"},            // a path never used
		{"api.example.test", 8443, "GET", "/v1/repos/a/"},   // a port never used
		{"example.test", 443, "GET", "/"},                   // the parent of a wildcard
		{"z.two.example.test", 443, "GET", "/"},             // no wildcard for two hosts
		{"val.example.test", 443, "GET", "/"},               // another class
		{"evil.example.test", 443, "GET", "/x"},             // refused, never proposed
		{"other.example.test", 443, "GET", "/c"},
	} {
		if got := decide(no.host, no.port, no.method, no.path); got != rules.Deny {
			t.Errorf("%s %s:%d%s is let through: %v\n%s", no.method, no.host, no.port, no.path, got, y)
		}
	}
	text := string(y)
	for _, want := range []string{
		`- host: "*.cdn.example.test"`,
		`paths: ["/v1/repos/"]`,
		"already covered by preset pypi",
		"risk high: accepts arbitrary user content (paste site)",
		"by 2 run(s) (r-1, r-2)",
		`#   host "evil.example.test" ports [443] methods [GET] path "/x": 7 request(s)`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("draft lacks %q:\n%s", want, text)
		}
	}
	if c.Allow[0].Entry.Host != "pastebin.com" {
		t.Errorf("the riskiest entry is not first: %+v", c.Allow[0].Entry)
	}
	if strings.Contains(text, "\nwith a newline") {
		t.Error("a header line broke out of its comment")
	}
	// Every class when none is named.
	if all := runs.Propose(runs.ProposeInput{Tenant: "acme", Observed: obs}); len(all.Classes) != 2 {
		t.Errorf("all classes: %d", len(all.Classes))
	}
}

func TestDraftHeader(t *testing.T) {
	from := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := runs.DraftHeader("acme", "", "7d", 3, from)
	if len(h) != 2 || h[0] != "Drafted by: sluice policy propose --tenant acme --since 7d" ||
		!strings.Contains(h[1], "From 3 observation(s) since 2026-01-02T03:04:05Z.") {
		t.Fatalf("header %q", h)
	}
	if h := runs.DraftHeader("acme", "agent", "2w", 0, from); h[0] != "Drafted by: sluice policy propose --tenant acme --class agent --since 2w" {
		t.Fatalf("with a class: %q", h[0])
	}
}
