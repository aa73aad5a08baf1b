package rules

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// decideConfig is the policy of the Decide tests. Tokens are written next to it at test
// time.
const decideConfig = `
upstream:
  hosts:
    Mirror.Internal.Test.: 198.51.100.7
    mapped.internal.test: "::ffff:198.51.100.8"
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: api.example.test
          - host: "*.cdn.example.test"
            methods: [get]
          - host: paths.example.test
            ports: [443, 8443]
            paths: ["/v1/", "/static/"]
          - host: bücher.example.test
          - host: 192.0.2.10
          - host: "[2001:db8::10]"
          - host: ws.example.test
            websocket: true
          - host: nows.example.test
          - host: mirror.internal.test
            allow_addresses: [10.1.2.3, 10.9.0.0/16]
          - preset: test-mirror
          - host: both.example.test
            ports: [8443]
          - host: multi.example.test
            ports: [8443]
          - host: multi.example.test
            methods: [GET]
          - host: multi.example.test
            methods: [POST]
            paths: ["/upload/"]
        passthrough:
          - host: pinned.example.test
          - host: both.example.test
      validation:
        allow:
          - host: validation.example.test
  globex:
    token_file: globex.token
    classes:
      agent:
        allow:
          - host: globex.example.test
          - host: "*.globex.test"
`

// fixture is a compiled policy with the tenants' tokens.
type fixture struct {
	pol    *Policy
	engine *Engine
	tokens map[string]string // tenant -> token
}

// token returns the tenant's token, as Compile asks for it.
func (f *fixture) token(tenant string) (string, error) { return tokens(f.tokens)(tenant) }

// MustToken returns a fresh random token.
func MustToken(tb testing.TB) string {
	tb.Helper()
	tok, err := NewToken()
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// MustFixture decodes yamlText's policy, gives each tenant named a random token and
// compiles.
func MustFixture(tb testing.TB, yamlText string, tenants ...string) *fixture {
	tb.Helper()
	f := &fixture{tokens: map[string]string{}}
	for _, tn := range tenants {
		f.tokens[tn] = MustToken(tb)
	}
	f.pol = MustPolicy(tb, yamlText, "sluice.yaml")
	e, err := Compile(f.pol, f.token)
	if err != nil {
		tb.Fatal(err)
	}
	f.engine = e
	return f
}

var (
	acmeAgent      = Identity{Tenant: "acme", Class: "agent"}
	acmeValidation = Identity{Tenant: "acme", Class: "validation"}
	globexAgent    = Identity{Tenant: "globex", Class: "agent"}
)

func TestDecide(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	connect := func(host string, port int) Query {
		return Query{Identity: acmeAgent, Host: host, Port: port, Stage: StageConnect}
	}
	request := func(method, host string, port int, path string) Query {
		return Query{Identity: acmeAgent, Host: host, Port: port, Method: method, Path: path, Stage: StageRequest}
	}
	as := func(id Identity, q Query) Query { q.Identity = id; return q }
	ws := func(q Query) Query { q.WebSocket = true; return q }

	tests := []struct {
		name   string
		q      Query
		action Action
		reason string
		host   string // the entry's host pattern, for non-denies
	}{
		// Host spelling.
		{"exact", connect("api.example.test", 443), Inspect, "", "api.example.test"},
		{"upper case", connect("API.Example.TEST", 443), Inspect, "", "api.example.test"},
		{"trailing dot", connect("api.example.test.", 443), Inspect, "", "api.example.test"},
		{"two trailing dots", connect("api.example.test..", 443), Deny, ReasonBadHost, ""},
		{"empty host", connect("", 443), Deny, ReasonBadHost, ""},
		{"host with port", connect("api.example.test:443", 443), Deny, ReasonBadHost, ""},
		{"host with space", connect("api .example.test", 443), Deny, ReasonBadHost, ""},
		{"host with underscore", connect("a_b.example.test", 443), Deny, ReasonBadHost, ""},
		{"unknown host", connect("other.example.test", 443), Deny, ReasonHostNotAllowed, ""},
		{"allowed host as prefix", connect("api.example.test.evil.test", 443), Deny, ReasonHostNotAllowed, ""},
		{"allowed host as suffix", connect("evilapi.example.test", 443), Deny, ReasonHostNotAllowed, ""},
		{"subdomain of exact", connect("x.api.example.test", 443), Deny, ReasonHostNotAllowed, ""},
		{"idn unicode", connect("bücher.example.test", 443), Inspect, "", "bücher.example.test"},
		{"idn upper unicode", connect("BÜCHER.example.test", 443), Inspect, "", "bücher.example.test"},
		{"idn punycode", connect("xn--bcher-kva.example.test", 443), Inspect, "", "bücher.example.test"},
		{"idn lookalike", connect("bucher.example.test", 443), Deny, ReasonHostNotAllowed, ""},

		// Wildcards.
		{"wildcard one label", connect("a.cdn.example.test", 443), Inspect, "", "*.cdn.example.test"},
		{"wildcard deep", connect("x.y.z.cdn.example.test", 443), Inspect, "", "*.cdn.example.test"},
		{"wildcard apex", connect("cdn.example.test", 443), Deny, ReasonHostNotAllowed, ""},
		{"wildcard apex trailing dot", connect("cdn.example.test.", 443), Deny, ReasonHostNotAllowed, ""},
		{"wildcard lookalike", connect("evilcdn.example.test", 443), Deny, ReasonHostNotAllowed, ""},
		{"wildcard numeric label", connect("10.cdn.example.test", 443), Inspect, "", "*.cdn.example.test"},

		// IP literals.
		{"ipv4 literal", connect("192.0.2.10", 443), Inspect, "", "192.0.2.10"},
		{"ipv4 other", connect("192.0.2.11", 443), Deny, ReasonHostNotAllowed, ""},
		{"ipv4 non-canonical", connect("192.0.2.010", 443), Deny, ReasonBadHost, ""},
		{"ipv4 short form", connect("3221225994", 443), Deny, ReasonBadHost, ""},
		{"v4-mapped bracketed", connect("[::ffff:192.0.2.10]", 443), Inspect, "", "192.0.2.10"},
		{"v4-mapped hex", connect("::ffff:c000:20a", 443), Inspect, "", "192.0.2.10"},
		{"ipv6 literal", connect("[2001:DB8:0::10]", 443), Inspect, "", "[2001:db8::10]"},
		{"ipv6 bare", connect("2001:db8::10", 443), Inspect, "", "[2001:db8::10]"},
		{"ipv6 other", connect("[2001:db8::11]", 443), Deny, ReasonHostNotAllowed, ""},
		{"ipv6 zone", connect("[2001:db8::10%25eth0]", 443), Deny, ReasonBadHost, ""},

		// Ports.
		{"default port 80", connect("api.example.test", 80), Inspect, "", "api.example.test"},
		{"port not default", connect("api.example.test", 8443), Deny, ReasonPortNotAllowed, ""},
		{"port 22", connect("api.example.test", 22), Deny, ReasonPortNotAllowed, ""},
		{"port 0", connect("api.example.test", 0), Deny, ReasonPortNotAllowed, ""},
		{"port out of range", connect("api.example.test", 65979), Deny, ReasonPortNotAllowed, ""},
		{"listed port", connect("paths.example.test", 8443), Inspect, "", "paths.example.test"},
		{"default not in list", connect("paths.example.test", 80), Deny, ReasonPortNotAllowed, ""},

		// Passthrough.
		{"passthrough", connect("pinned.example.test", 443), Passthrough, "", "pinned.example.test"},
		{"passthrough port", connect("pinned.example.test", 8443), Deny, ReasonPortNotAllowed, ""},
		{"passthrough first", connect("both.example.test", 443), Passthrough, "", "both.example.test"},
		{"allow on other port", connect("both.example.test", 8443), Inspect, "", "both.example.test"},
		{"passthrough is no request allow", request("GET", "pinned.example.test", 80, "/"), Deny, ReasonHostNotAllowed, ""},

		// Requests: methods.
		{"request any method", request("DELETE", "api.example.test", 443, "/x"), Allow, "", "api.example.test"},
		{"request method allowed", request("GET", "a.cdn.example.test", 443, "/x"), Allow, "", "*.cdn.example.test"},
		{"request method lower case", request("get", "a.cdn.example.test", 443, "/x"), Allow, "", "*.cdn.example.test"},
		{"request method denied", request("POST", "a.cdn.example.test", 443, "/x"), Deny, ReasonMethodNotAllowed, ""},
		{"request method empty", request("", "a.cdn.example.test", 443, "/x"), Deny, ReasonMethodNotAllowed, ""},
		{"request port", request("GET", "a.cdn.example.test", 8080, "/x"), Deny, ReasonPortNotAllowed, ""},
		{"request unknown host", request("GET", "nope.example.test", 443, "/"), Deny, ReasonHostNotAllowed, ""},

		// Requests: paths.
		{"path allowed", request("POST", "paths.example.test", 443, "/v1/models"), Allow, "", "paths.example.test"},
		{"path second prefix", request("GET", "paths.example.test", 8443, "/static/app.js"), Allow, "", "paths.example.test"},
		{"path exact prefix", request("GET", "paths.example.test", 443, "/v1/"), Allow, "", "paths.example.test"},
		{"path encoded ok", request("GET", "paths.example.test", 443, "/v1/a%20b"), Allow, "", "paths.example.test"},
		{"path other", request("GET", "paths.example.test", 443, "/v2/models"), Deny, ReasonPathNotAllowed, ""},
		{"path without slash", request("GET", "paths.example.test", 443, "/v1"), Deny, ReasonPathNotAllowed, ""},
		{"path case", request("GET", "paths.example.test", 443, "/V1/models"), Deny, ReasonPathNotAllowed, ""},
		{"path empty", request("GET", "paths.example.test", 443, ""), Deny, ReasonPathNotAllowed, ""},
		{"path asterisk", request("OPTIONS", "paths.example.test", 443, "*"), Deny, ReasonPathNotAllowed, ""},
		{"path traversal", request("GET", "paths.example.test", 443, "/v1/../admin"), Deny, ReasonPathNotAllowed, ""},
		{"path traversal to allowed", request("GET", "paths.example.test", 443, "/v1/../v1/x"), Deny, ReasonPathNotAllowed, ""},
		{"path traversal into allowed", request("GET", "paths.example.test", 443, "/admin/../v1/x"), Deny, ReasonPathNotAllowed, ""},
		{"path encoded dots", request("GET", "paths.example.test", 443, "/v1/%2e%2e/admin"), Deny, ReasonPathNotAllowed, ""},
		{"path encoded dots upper", request("GET", "paths.example.test", 443, "/v1/%2E%2E/admin"), Deny, ReasonPathNotAllowed, ""},
		{"path mixed dots", request("GET", "paths.example.test", 443, "/v1/.%2E/admin"), Deny, ReasonPathNotAllowed, ""},
		{"path encoded slash", request("GET", "paths.example.test", 443, "/v1/..%2Fadmin"), Deny, ReasonPathNotAllowed, ""},
		{"path double encoded", request("GET", "paths.example.test", 443, "/v1/%252e%252e/admin"), Deny, ReasonPathNotAllowed, ""},
		{"path backslash", request("GET", "paths.example.test", 443, "/v1/..\\admin"), Deny, ReasonPathNotAllowed, ""},
		{"path servlet", request("GET", "paths.example.test", 443, "/v1/..;/admin"), Deny, ReasonPathNotAllowed, ""},
		{"path dot", request("GET", "paths.example.test", 443, "/v1/./x"), Deny, ReasonPathNotAllowed, ""},
		{"path bad escape", request("GET", "paths.example.test", 443, "/v1/%zz"), Deny, ReasonPathNotAllowed, ""},
		{"path unrestricted entry ignores dots", request("GET", "api.example.test", 443, "/a/../b"), Allow, "", "api.example.test"},

		// Requests: WebSocket.
		{"websocket allowed", ws(request("GET", "ws.example.test", 443, "/socket")), Allow, "", "ws.example.test"},
		{"websocket not allowed", ws(request("GET", "nows.example.test", 443, "/socket")), Deny, ReasonWebSocketNotAllowed, ""},
		{"no websocket plain request", request("GET", "nows.example.test", 443, "/socket"), Allow, "", "nows.example.test"},

		// The most specific failure among host-matching entries.
		{"reason port only", request("GET", "multi.example.test", 22, "/"), Deny, ReasonPortNotAllowed, ""},
		{"reason method beats port", request("PUT", "multi.example.test", 443, "/"), Deny, ReasonMethodNotAllowed, ""},
		{"reason path beats method", request("POST", "multi.example.test", 443, "/other/"), Deny, ReasonPathNotAllowed, ""},
		{"multi second entry", request("GET", "multi.example.test", 443, "/"), Allow, "", "multi.example.test"},
		{"multi third entry", request("POST", "multi.example.test", 443, "/upload/x"), Allow, "", "multi.example.test"},

		// Presets.
		{"preset connect", connect("mirror.preset.test", 443), Inspect, "", "mirror.preset.test"},
		{"preset request", request("HEAD", "mirror.preset.test", 443, "/simple/"), Allow, "", "mirror.preset.test"},
		{"preset method", request("POST", "mirror.preset.test", 443, "/simple/"), Deny, ReasonMethodNotAllowed, ""},
		{"preset wildcard", connect("a.files.preset.test", 443), Inspect, "", "*.files.preset.test"},

		// Tenants and classes.
		{"other tenant's host", connect("globex.example.test", 443), Deny, ReasonHostNotAllowed, ""},
		{"other tenant's wildcard", connect("a.globex.test", 443), Deny, ReasonHostNotAllowed, ""},
		{"other tenant own host", as(globexAgent, connect("globex.example.test", 443)), Inspect, "", "globex.example.test"},
		{"other tenant gets no acme host", as(globexAgent, connect("api.example.test", 443)), Deny, ReasonHostNotAllowed, ""},
		{"other tenant gets no acme passthrough", as(globexAgent, connect("pinned.example.test", 443)), Deny, ReasonHostNotAllowed, ""},
		{"other tenant gets no acme request", as(globexAgent, request("GET", "api.example.test", 443, "/")), Deny, ReasonHostNotAllowed, ""},
		{"other tenant, acme's class name", as(Identity{Tenant: "globex", Class: "validation"}, connect("validation.example.test", 443)), Deny, ReasonHostNotAllowed, ""},
		{"class validation", as(acmeValidation, connect("validation.example.test", 443)), Inspect, "", "validation.example.test"},
		{"class validation lacks agent", as(acmeValidation, connect("api.example.test", 443)), Deny, ReasonHostNotAllowed, ""},
		{"unknown class", as(Identity{Tenant: "acme", Class: "premerge"}, connect("api.example.test", 443)), Deny, ReasonHostNotAllowed, ""},
		{"unknown tenant", as(Identity{Tenant: "initech", Class: "agent"}, connect("api.example.test", 443)), Deny, ReasonHostNotAllowed, ""},
		{"zero identity", as(Identity{}, connect("api.example.test", 443)), Deny, ReasonHostNotAllowed, ""},
		{"unknown stage", Query{Identity: acmeAgent, Host: "api.example.test", Port: 443, Stage: Stage(9)}, Deny, ReasonHostNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := f.engine.Decide(tt.q)
			if d.Action != tt.action || d.Reason != tt.reason {
				t.Fatalf("Decide(%+v) = %v %q, want %v %q", tt.q, d.Action, d.Reason, tt.action, tt.reason)
			}
			if d.Tenant != tt.q.Identity.Tenant {
				t.Errorf("Tenant = %q, want %q", d.Tenant, tt.q.Identity.Tenant)
			}
			if tt.action == Deny {
				if d.Entry != nil {
					t.Errorf("a deny carries entry %+v", d.Entry)
				}
				return
			}
			if d.Entry == nil || d.Entry.Host != tt.host {
				t.Errorf("entry = %+v, want host %q", d.Entry, tt.host)
			}
		})
	}
}

func TestDecideProvenance(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	d := f.engine.Decide(Query{Identity: acmeAgent, Host: "a.cdn.example.test", Port: 443, Stage: StageConnect})
	if d.Entry == nil || d.Entry.Line != 13 {
		t.Fatalf("entry = %+v, want line 13 of the config", d.Entry)
	}
	d = f.engine.Decide(Query{Identity: acmeAgent, Host: "mirror.preset.test", Port: 443, Stage: StageConnect})
	if d.Entry == nil || d.Entry.Preset != testPreset || d.Entry.Line != 26 {
		t.Fatalf("preset entry = %+v, want preset %q at line 26", d.Entry, testPreset)
	}
}

func TestEngineIsACopy(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	q := Query{Identity: acmeAgent, Host: "a.cdn.example.test", Port: 443, Method: "POST", Path: "/", Stage: StageRequest}
	agent := f.pol.Tenants["acme"].Classes["agent"]
	agent.Allow[1].Methods[0] = "POST"
	agent.Allow[1].Host = "*.example.test"
	agent.Allow = append(agent.Allow, Entry{Host: "late.example.test"})
	if d := f.engine.Decide(q); d.Action != Deny || d.Reason != ReasonMethodNotAllowed {
		t.Errorf("after changing the config: %v %q, want deny %q", d.Action, d.Reason, ReasonMethodNotAllowed)
	}
	if d := f.engine.Decide(Query{Identity: acmeAgent, Host: "late.example.test", Port: 443}); d.Action != Deny {
		t.Errorf("an entry added after Compile took effect: %v", d.Action)
	}
}

func TestDecisionAllowAddresses(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	e := f.engine
	d := e.Decide(Query{Identity: acmeAgent, Host: "mirror.internal.test", Port: 443})
	want := []netip.Prefix{netip.MustParsePrefix("10.1.2.3/32"), netip.MustParsePrefix("10.9.0.0/16")}
	if d.Action != Inspect || !slices.Equal(d.AllowAddresses, want) {
		t.Errorf("decision = %v %v, want inspect %v", d.Action, d.AllowAddresses, want)
	}
	if d := e.Decide(Query{Identity: acmeAgent, Host: "api.example.test", Port: 443}); d.AllowAddresses != nil {
		t.Errorf("entry without allow_addresses: %v, want nil", d.AllowAddresses)
	}
	if d := e.Decide(Query{Identity: acmeAgent, Host: "mirror.internal.test", Port: 22}); d.Action != Deny || d.AllowAddresses != nil {
		t.Errorf("deny: %v %v, want deny without addresses", d.Action, d.AllowAddresses)
	}
	// Another tenant's class does not get the entry's addresses.
	if d := e.Decide(Query{Identity: globexAgent, Host: "mirror.internal.test", Port: 443}); d.AllowAddresses != nil {
		t.Errorf("other tenant: %v %v, want no addresses", d.Action, d.AllowAddresses)
	}
}

func TestDecisionOutlivesReload(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	q := Query{Identity: acmeAgent, Host: "mirror.internal.test", Port: 443}
	before := f.engine.Decide(q)
	want := slices.Clone(before.AllowAddresses)
	// The reload drops the entry's addresses: the next decision has none, the one taken
	// before keeps what it was decided for.
	cfg := f.pol // Compile copied what it needs
	for _, cl := range cfg.Tenants["acme"].Classes {
		for i := range cl.Allow {
			if cl.Allow[i].Host == "mirror.internal.test" {
				cl.Allow[i].AllowAddresses = nil
			}
		}
	}
	next, err := Compile(cfg, f.token)
	if err != nil {
		t.Fatal(err)
	}
	next.ShareRuns(f.engine)
	if d := next.Decide(q); d.AllowAddresses != nil {
		t.Fatalf("after the reload: %v, want no addresses", d.AllowAddresses)
	}
	if len(want) == 0 || !slices.Equal(before.AllowAddresses, want) {
		t.Errorf("decision before the reload = %v, want %v", before.AllowAddresses, want)
	}
}

func TestAllowAddressesParsing(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"10.1.2.3", "10.1.2.3/32"},
		{"10.1.2.7/24", "10.1.2.0/24"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"::ffff:10.1.2.3", "10.1.2.3/32"},
		{"fd00::1", "fd00::1/128"},
		{"fd00::/8", "fd00::/8"},
	} {
		p, err := parsePrefix(tt.in)
		if err != nil || p.String() != tt.want {
			t.Errorf("parsePrefix(%q) = %v, %v; want %s", tt.in, p, err, tt.want)
		}
	}
	for _, bad := range []string{"", "10.1.2.3/33", "::ffff:10.0.0.0/90", "fe80::1%eth0", "mirror.test", "10.1.2"} {
		if p, err := parsePrefix(bad); err == nil {
			t.Errorf("parsePrefix(%q) = %v, want error", bad, p)
		}
	}
}

func TestUpstreamHostsAndTenants(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	got := f.engine.UpstreamHosts()
	want := map[string]netip.Addr{
		"mirror.internal.test": netip.MustParseAddr("198.51.100.7"),
		"mapped.internal.test": netip.MustParseAddr("198.51.100.8"),
	}
	if len(got) != len(want) {
		t.Fatalf("UpstreamHosts = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("UpstreamHosts[%q] = %v, want %v", k, got[k], v)
		}
	}
	got["evil.test"] = netip.MustParseAddr("127.0.0.1")
	if _, ok := f.engine.UpstreamHosts()["evil.test"]; ok {
		t.Error("UpstreamHosts returns the engine's own map")
	}
	if ts := f.engine.Tenants(); !slices.Equal(ts, []string{"acme", "globex"}) {
		t.Errorf("Tenants = %v", ts)
	}
	if cs := f.engine.Classes("acme"); !slices.Equal(cs, []string{"agent", "validation"}) {
		t.Errorf("Classes = %v", cs)
	}
	allow, pass := f.engine.Entries("acme", "agent")
	if len(allow) != 15 || len(pass) != 2 { // the preset expands to two entries
		t.Errorf("Entries = %d allow, %d passthrough; want 15, 2", len(allow), len(pass))
	}
	if allow, pass := f.engine.Entries("globex", "validation"); allow != nil || pass != nil {
		t.Errorf("Entries of an unknown class = %v %v", allow, pass)
	}
}

// TestIdentifyTokenClasses: the tenant token selects only its token classes
// (the default class unless configured), so that a sandbox holding it cannot
// pick a broader class; a run token keeps its own class either way.
func TestIdentifyTokenClasses(t *testing.T) {
	const listed = `
tenants:
  acme:
    token_file: acme.token
    token_classes: [agent, validation]
    classes:
      agent: {}
      validation: {}
      premerge: {}
`
	for _, tt := range []struct {
		name, config, user string
		want               Identity // zero: ErrClassNotForToken
	}{
		{"default, no class", decideConfig, "acme", acmeAgent},
		{"default, agent", decideConfig, "acme/agent", acmeAgent},
		{"default, other class", decideConfig, "acme/validation", Identity{}},
		{"listed class", listed, "acme/validation", acmeValidation},
		{"listed, agent", listed, "acme", acmeAgent},
		{"class not listed", listed, "acme/premerge", Identity{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := MustFixture(t, tt.config, "acme", "globex")
			got, err := f.engine.Identify(tt.user, f.tokens["acme"])
			if tt.want == (Identity{}) {
				if !errors.Is(err, ErrClassNotForToken) || !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("Identify(%q) = %+v, %v; want ErrClassNotForToken wrapping ErrUnauthenticated", tt.user, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Identify(%q) = %+v, %v; want %+v", tt.user, got, err, tt.want)
			}
		})
	}
	t.Run("run token keeps its class", func(t *testing.T) {
		f := MustFixture(t, decideConfig, "acme", "globex")
		tok := MustToken(t)
		if err := f.engine.AddRun(Run{ID: "run-1", Tenant: "acme", Class: "validation", TokenHash: HashToken(tok)}); err != nil {
			t.Fatal(err)
		}
		for _, user := range []string{"acme", "acme/validation"} {
			got, err := f.engine.Identify(user, tok)
			if err != nil || got != (Identity{Tenant: "acme", Class: "validation", Run: "run-1"}) {
				t.Errorf("run token as %q: %+v, %v; want the run's class", user, got, err)
			}
		}
		if _, err := f.engine.Identify("acme/agent", tok); !errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrClassNotForToken) {
			t.Errorf("run token naming another class: %v; want the plain refusal", err)
		}
	})
}

func TestIdentify(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	acme, globex := f.tokens["acme"], f.tokens["globex"]
	tests := []struct {
		name, user, token string
		want              Identity // zero: unauthenticated
	}{
		{"tenant token", "acme", acme, acmeAgent},
		{"explicit class", "acme/agent", acme, acmeAgent},
		{"other tenant", "globex", globex, globexAgent},
		{"wrong token", "acme", MustToken(t), Identity{}},
		{"other tenant's token", "acme", globex, Identity{}},
		{"other tenant's token reversed", "globex", acme, Identity{}},
		{"unknown class", "acme/premerge", acme, Identity{}},
		{"class of another tenant", "globex/validation", globex, Identity{}},
		{"unknown tenant", "initech", acme, Identity{}},
		{"empty user", "", acme, Identity{}},
		{"empty class", "acme/", acme, Identity{}},
		{"no tenant", "/agent", acme, Identity{}},
		{"nested class", "acme/agent/x", acme, Identity{}},
		{"upper case tenant", "ACME", acme, Identity{}},
		{"empty token", "acme", "", Identity{}},
		{"token with newline", "acme", acme + "\n", Identity{}},
		{"token prefix", "acme", acme[:len(acme)-1], Identity{}},
		{"token upper", "acme", strings.ToUpper(acme), Identity{}},
	}
	var errText string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.engine.Identify(tt.user, tt.token)
			if tt.want == (Identity{}) {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("Identify(%q) = %+v, %v; want ErrUnauthenticated", tt.user, got, err)
				}
				if got != (Identity{}) {
					t.Errorf("identity %+v with an error", got)
				}
				if errText == "" {
					errText = err.Error()
				} else if err.Error() != errText {
					t.Errorf("error text %q differs from %q: an oracle", err, errText)
				}
				if strings.Contains(err.Error(), tt.user) && tt.user != "" || tt.token != "" && strings.Contains(err.Error(), tt.token) {
					t.Errorf("error %q repeats the credentials", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Identify(%q) = %+v, %v; want %+v", tt.user, got, err, tt.want)
			}
		})
	}
}

func TestCompileTokens(t *testing.T) {
	p := MustPolicy(t, "tenants:\n  acme:\n    classes: {agent: {}}\n", "sluice.yaml")
	tok := MustToken(t)
	tests := []struct {
		name    string
		token   string
		err     error
		wantErr string
	}{
		{name: "trimmed", token: "  " + tok + "\n"},
		{name: "failing source", err: errors.New("token_file acme.token: gone"), wantErr: "tenant acme: token_file acme.token: gone"},
		{name: "empty", token: " \n", wantErr: "empty token"},
		{name: "short", token: "abcdefghijklmno\n", wantErr: "shorter than 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Compile(p, func(string) (string, error) { return tt.token, tt.err })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Compile: %v, want error containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "abcdefghijklmno") {
					t.Errorf("error %q holds the token", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id, err := e.Identify("acme", tok); err != nil || id != acmeAgent {
				t.Errorf("Identify with the trimmed token = %+v, %v", id, err)
			}
		})
	}
}

func TestCompileRefuses(t *testing.T) {
	tok := MustToken(t)
	shared := MustPolicy(t, "tenants:\n  a: {}\n  b: {}\n", "sluice.yaml")
	if _, err := Compile(shared, tokens(map[string]string{"a": tok, "b": tok})); err == nil || !strings.Contains(err.Error(), "same token") || strings.Contains(err.Error(), tok) {
		t.Errorf("two tenants sharing a token: %v, want a refusal without the token", err)
	}
	if _, err := Compile(nil, tokens(nil)); err == nil {
		t.Error("Compile(nil) succeeded")
	}
	ok := tokens(map[string]string{"acme": tok})
	for name, bad := range map[string]*Policy{
		"wide wildcard":  {Tenants: map[string]*Tenant{"acme": {Classes: map[string]*Class{"agent": {Allow: []Entry{{Host: "*.com"}}}}}}},
		"tenant name":    {Tenants: map[string]*Tenant{"Acme": {}}},
		"upstream host":  {UpstreamHosts: map[string]string{"mirror.test": "not-an-ip"}},
		"unknown slot":   {PresetHosts: map[string][]string{"no_such_slot": {"a.example.test"}}},
		"unknown preset": {Tenants: map[string]*Tenant{"acme": {Classes: map[string]*Class{"agent": {Allow: []Entry{{Preset: "no-such-preset"}}}}}}},
	} {
		if _, err := Compile(bad, ok); err == nil {
			t.Errorf("%s: Compile of an invalid policy succeeded", name)
		}
	}
}

func TestStrings(t *testing.T) {
	for a, want := range map[Action]string{Deny: "deny", Inspect: "inspect", Passthrough: "passthrough", Allow: "allow", Action(9): "action(9)"} {
		if a.String() != want {
			t.Errorf("Action(%d).String() = %q, want %q", int(a), a.String(), want)
		}
	}
	var zero Decision
	if zero.Action != Deny {
		t.Error("the zero Decision is not a deny")
	}
	if StageConnect.String() != "connect" || StageRequest.String() != "request" {
		t.Error("Stage.String")
	}
}

// FuzzDecide checks that Decide never panics and never lets through a host that no entry
// pattern of the identity's own class matches, nor a path that escapes the entry's
// prefixes.
func FuzzDecide(f *testing.F) {
	fx := MustFixture(f, decideConfig, "acme", "globex")
	f.Add("api.example.test", 443, "GET", "/", false, uint8(0), uint8(0))
	f.Add("a.cdn.example.test.", 443, "get", "/x", false, uint8(1), uint8(0))
	f.Add("paths.example.test", 8443, "POST", "/v1/%2e%2e/admin", false, uint8(1), uint8(0))
	f.Add("[::ffff:192.0.2.10]", 80, "GET", "/", false, uint8(0), uint8(0))
	f.Add("bücher.example.test", 443, "GET", "/", true, uint8(1), uint8(1))
	f.Add("globex.example.test", 443, "GET", "/", false, uint8(0), uint8(2))
	f.Add("ws.example.test", 443, "GET", "/s", true, uint8(1), uint8(0))
	identities := []Identity{acmeAgent, acmeValidation, globexAgent, {Tenant: "acme", Class: "nope"}, {}}
	f.Fuzz(func(t *testing.T, host string, port int, method, path string, websocket bool, stage, who uint8) {
		id := identities[int(who)%len(identities)]
		q := Query{Identity: id, Host: host, Port: port, Method: method, Path: path, WebSocket: websocket, Stage: Stage(stage % 3)}
		d := fx.engine.Decide(q)
		if d.Action == Deny {
			if d.Reason == "" || d.Entry != nil {
				t.Fatalf("deny without reason or with entry: %+v", d)
			}
			return
		}
		if d.Reason != "" || d.Entry == nil {
			t.Fatalf("non-deny with reason or without entry: %+v", d)
		}
		switch {
		case q.Stage == StageConnect && d.Action == Allow, q.Stage == StageRequest && d.Action != Allow:
			t.Fatalf("action %v at stage %v", d.Action, q.Stage)
		}
		h, err := NormalizeHost(host)
		if err != nil {
			t.Fatalf("let through a host NormalizeHost refuses: %q", host)
		}
		// Reference matcher over the raw config entries of the identity's own class.
		cl := fx.pol.Tenants[id.Tenant].Classes[id.Class]
		matched := false
		for _, e := range slices.Concat(cl.Allow, cl.Passthrough) {
			patterns := []string{e.Host}
			if e.Preset != "" {
				patterns = nil
				for _, pe := range presets[e.Preset].Entries {
					patterns = append(patterns, pe.Host)
				}
			}
			for _, p := range patterns {
				if refMatch(p, h) {
					matched = true
				}
			}
		}
		if !matched {
			t.Fatalf("%v for host %q (%q) that no entry of %+v matches", d.Action, host, h, id)
		}
		if !refMatch(d.Entry.Host, h) {
			t.Fatalf("entry %q does not match host %q", d.Entry.Host, h)
		}
		ports := d.Entry.Ports
		if len(ports) == 0 {
			ports = []int{80, 443}
		}
		if !slices.Contains(ports, port) {
			t.Fatalf("port %d not in %v", port, ports)
		}
		if d.Action == Allow && len(d.Entry.Paths) > 0 {
			// Whatever a server makes of the path, it stays under a prefix: no dot segment
			// after one or two rounds of decoding.
			dec := pathUnescapeAll(path)
			for seg := range strings.FieldsFuncSeq(dec, func(r rune) bool { return r == '/' || r == '\\' }) {
				seg, _, _ = strings.Cut(seg, ";")
				if seg == ".." || seg == "." {
					t.Fatalf("allowed path %q has dot segments (%q)", path, dec)
				}
			}
			if !slices.ContainsFunc(d.Entry.Paths, func(p string) bool { return strings.HasPrefix(dec, p) || strings.HasPrefix(path, p) }) {
				t.Fatalf("allowed path %q is under none of %v", path, d.Entry.Paths)
			}
		}
	})
}

// refMatch is a second, plain implementation of host matching for FuzzDecide.
func refMatch(pattern, host string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		s, err := NormalizeHost(suffix)
		if err != nil {
			return false
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return false
		}
		return strings.HasSuffix(host, "."+s) && host != s
	}
	p, err := NormalizeHost(pattern)
	return err == nil && p == host
}

// pathUnescapeAll decodes %XX escapes twice, leaving bad ones as they are.
func pathUnescapeAll(p string) string {
	for range 2 {
		var b strings.Builder
		for i := 0; i < len(p); i++ {
			if p[i] == '%' && i+2 < len(p) && ishex(p[i+1]) && ishex(p[i+2]) {
				b.WriteByte(unhex(p[i+1])<<4 | unhex(p[i+2]))
				i += 2
				continue
			}
			b.WriteByte(p[i])
		}
		p = b.String()
	}
	return p
}

func TestDecideConcurrent(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	done := make(chan bool)
	for range 4 {
		go func() {
			ok := true
			for range 200 {
				d := f.engine.Decide(Query{Identity: acmeAgent, Host: "a.cdn.example.test", Port: 443, Method: "GET", Path: "/x", Stage: StageRequest})
				_, err := f.engine.Identify("acme", f.tokens["acme"])
				ok = ok && d.Action == Allow && err == nil && len(d.AllowAddresses) == 0
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("a concurrent Decide or Identify went wrong")
		}
	}
}

func BenchmarkDecide(b *testing.B) {
	f := MustFixture(b, decideConfig, "acme", "globex")
	q := Query{Identity: acmeAgent, Host: "a.cdn.example.test", Port: 443, Method: "GET", Path: "/v1/x", Stage: StageRequest}
	for b.Loop() {
		if f.engine.Decide(q).Action != Allow {
			b.Fatal("denied")
		}
	}
}

func ishex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

func unhex(c byte) byte {
	v, _ := strconv.ParseUint(string(c), 16, 8)
	return byte(v)
}

// TestResolvePolicyTenantToken: the effective policy says whether the tenant
// token reaches the class, as Identify decides it.
func TestResolvePolicyTenantToken(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	for class, want := range map[string]bool{"agent": true, "validation": false} {
		p, err := ResolvePolicy(PolicyInput{Policy: f.pol, Tenant: "acme", Class: class})
		if err != nil {
			t.Fatal(err)
		}
		_, idErr := f.engine.Identify("acme/"+class, f.tokens["acme"])
		if p.TenantToken != want || (idErr == nil) != want {
			t.Errorf("class %s: TenantToken %v, Identify %v; want %v", class, p.TenantToken, idErr, want)
		}
	}
}
