package rules

import (
	"strings"
	"sync"
	"testing"
	"time"

	presetdata "github.com/sluice-egress/sluice/rules/presets"
)

// policyConfig exercises presets with host slots, derivation limits and run extras.
const policyConfig = `
presets:
  hosts:
    npm_registry: [registry.npm.example.test]
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: api.example.test
          - preset: go
        derive:
          presets: [npm, pypi, go, github]
        run_extras: ["*.extras.example.test", exact.example.test]
      validation:
        allow:
          - preset: npm
  globex:
    token_file: globex.token
    classes:
      agent: {}
`

// Repositories as package derive reads them (its testdata/manifests node-private with
// the remote https://github.com/acme/app.git, docker and python): rules takes the result,
// not the files, and cannot import derive.
var (
	nodeDerived = &Derived{
		Presets: []DerivedPreset{
			{Name: "github", From: []string{"git remote"}},
			{Name: "npm", From: []string{".npmrc", "package.json", "packages/web/package.json", "yarn.lock"}},
		},
		Repo: &GitRepo{Host: "github.com", Path: "acme/app", Preset: "github"},
		Suggestions: []Suggestion{
			{Host: "downloads.vendor.test", Port: 443, URL: "https://downloads.vendor.test/pkg/tarball-dep-1.0.0.tgz", Source: "package.json:17", Why: "tarball dependency tarball-dep"},
			{Host: "git.corp.test", Port: 443, URL: "https://git.corp.test/", Source: "package.json:11", Why: "git dependency ssh-lib (over ssh: the gateway carries https only)"},
			{Host: "github.com", Port: 443, URL: "https://github.com/owner/shorthand-lib", Source: "package.json:10", Why: "git dependency shorthand-lib"},
			{Host: "github.com", Port: 443, URL: "https://github.com/someone/forked-lib", Source: "package.json:9", Why: "git dependency forked-lib"},
			{Host: "npm.corp.test", Port: 443, URL: "https://npm.corp.test/", Source: ".npmrc:1", Why: ".npmrc @corp registry"},
			{Host: "npm.corp.test", Port: 443, URL: "https://npm.corp.test/", Source: "package.json:20", Why: "publishConfig.registry"},
			{Host: "npm.corp.test", Port: 443, URL: "https://npm.corp.test/@corp/logger/-/logger-1.3.0.tgz", Source: "yarn.lock:7", Why: "lockfile resolved URL"},
			{Host: "registry.npm.example.test", Port: 443, URL: "https://registry.npm.example.test/", Source: ".npmrc:3", Why: ".npmrc registry"},
			{Host: "registry.npm.example.test", Port: 443, URL: "https://registry.npm.example.test/left-pad/-/left-pad-1.3.0.tgz", Source: "yarn.lock:12", Why: "lockfile resolved URL"},
		},
	}
	dockerDerived = &Derived{
		Presets: []DerivedPreset{{Name: "alpine", From: []string{"Dockerfile"}}, {Name: "debian", From: []string{"Dockerfile"}}},
		Suggestions: []Suggestion{
			{Host: "pypi.corp.test", Port: 443, URL: "https://pypi.corp.test/simple", Source: "Dockerfile:6", Why: "--extra-index-url"},
		},
	}
	pythonDerived = &Derived{
		Presets: []DerivedPreset{{Name: "pypi", From: []string{"poetry.lock", "pyproject.toml", "requirements-dev.txt", "requirements.txt"}}},
		Suggestions: []Suggestion{
			{Host: "pypi.corp.test", Port: 443, URL: "https://pypi.corp.test/simple/", Source: "requirements.txt:3", Why: "--extra-index-url"},
		},
	}
)

func findUse(p *EffectivePolicy, name string) *PresetUse {
	for i := range p.Presets {
		if p.Presets[i].Preset.Name == name {
			return &p.Presets[i]
		}
	}
	return nil
}

func TestResolvePolicy(t *testing.T) {
	f := MustFixture(t, policyConfig, "acme", "globex")
	p, err := ResolvePolicy(PolicyInput{Policy: f.pol, Tenant: "acme", Class: "agent", Run: "r1", Derived: nodeDerived})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("config entry keeps file and line", func(t *testing.T) {
		d := p.Decide(Query{Host: "api.example.test", Port: 443, Stage: StageConnect})
		if d.Action != Inspect || d.Entry.Origin.Kind != OriginConfig || d.Entry.Origin.Line != 11 ||
			d.Entry.Origin.String() != f.pol.File+":11" {
			t.Fatalf("%+v %q", d, d.Entry.Origin)
		}
	})
	t.Run("config preset with unset slots contributes nothing and says so", func(t *testing.T) {
		u := findUse(p, "go")
		if u == nil || u.Entries != 0 || !strings.Contains(u.Note, "presets.hosts.go_proxy, presets.hosts.go_sumdb unset") {
			t.Fatalf("go use = %+v", u)
		}
	})
	t.Run("derived registry from its slot", func(t *testing.T) {
		d := p.Decide(Query{Host: "registry.npm.example.test", Port: 443, Method: "GET", Path: "/left-pad", Stage: StageRequest})
		if d.Action != Allow || d.Entry.Origin.Kind != OriginDerived || d.Entry.Origin.Preset.String() != "npm@1" ||
			!strings.Contains(d.Entry.Origin.String(), "derived from .npmrc, package.json") {
			t.Fatalf("%+v %q", d, d.Entry.Origin)
		}
		if d := p.Decide(Query{Host: "registry.npm.example.test", Port: 443, Method: "PUT", Path: "/left-pad", Stage: StageRequest}); d.Action != Deny {
			t.Fatalf("publish allowed: %+v", d)
		}
	})
	t.Run("git host only for the remote's repository", func(t *testing.T) {
		for _, tc := range []struct {
			method, path string
			want         Action
		}{
			{"GET", "/acme/app.git/info/refs", Allow},
			{"POST", "/acme/app.git/git-upload-pack", Allow},
			{"POST", "/acme/app/git-receive-pack", Allow},
			{"GET", "/acme/other.git/info/refs", Deny},
			{"GET", "/acme/app-evil/info/refs", Deny},
			{"GET", "/acme/app.git/../other.git/info/refs", Deny},
			{"DELETE", "/acme/app.git/x", Deny},
		} {
			d := p.Decide(Query{Host: "github.com", Port: 443, Method: tc.method, Path: tc.path, Stage: StageRequest})
			if d.Action != tc.want {
				t.Errorf("%s %s: %v %s", tc.method, tc.path, d.Action, d.Reason)
			}
		}
		if d := p.Decide(Query{Host: "gitlab.com", Port: 443, Stage: StageConnect}); d.Action != Deny {
			t.Errorf("another git host: %+v", d)
		}
	})
	t.Run("repository URLs stay suggestions", func(t *testing.T) {
		for _, h := range []string{"npm.corp.test", "downloads.vendor.test", "git.corp.test"} {
			if d := p.Decide(Query{Host: h, Port: 443, Stage: StageConnect}); d.Action != Deny {
				t.Errorf("%s allowed from a repository file: %+v", h, d)
			}
		}
		hosts := map[string]bool{}
		for _, s := range p.Suggestions {
			hosts[s.Host] = true
		}
		if !hosts["npm.corp.test"] || hosts["registry.npm.example.test"] {
			t.Errorf("suggestions = %+v (allowed hosts must be left out)", p.Suggestions)
		}
	})

	t.Run("derivation limited by derive.presets", func(t *testing.T) {
		p, err := ResolvePolicy(PolicyInput{Policy: f.pol, Tenant: "acme", Derived: dockerDerived})
		if err != nil {
			t.Fatal(err)
		}
		u := findUse(p, "alpine")
		if u == nil || u.Entries != 0 || !strings.Contains(u.Note, "not permitted") {
			t.Fatalf("alpine = %+v", u)
		}
		if d := p.Decide(Query{Host: "dl-cdn.alpinelinux.org", Port: 443, Stage: StageConnect}); d.Action != Deny {
			t.Fatalf("non-permitted preset applied: %+v", d)
		}
		// The validation class permits no derivation at all.
		p, err = ResolvePolicy(PolicyInput{Policy: f.pol, Tenant: "acme", Class: "validation", Derived: pythonDerived})
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Decide(Query{Host: "pypi.org", Port: 443, Stage: StageConnect}); d.Action != Deny {
			t.Fatalf("validation got pypi: %+v", d)
		}
	})

	t.Run("grants and extras", func(t *testing.T) {
		now := time.Now()
		in := PolicyInput{Policy: f.pol, Tenant: "acme", Class: "agent", Run: "r2", Now: now,
			Grants: []Grant{
				{ID: "ar-1", Tenant: "acme", Entry: Entry{Host: "npm.corp.test", Methods: []string{"get"}}},
				{ID: "ar-2", Tenant: "acme", Entry: Entry{Host: "old.example.test"}, Expires: now.Add(-time.Minute)},
				{ID: "ar-3", Tenant: "acme", Class: "validation", Entry: Entry{Host: "val.example.test"}},
				{ID: "ar-4", Tenant: "acme", Entry: Entry{Host: "pinned.example.test"}, Passthrough: true},
			},
			Extras: []Entry{{Host: "a.extras.example.test"}, {Host: "exact.example.test", Paths: []string{"/v1/"}}},
		}
		p, err := ResolvePolicy(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			host   string
			want   Action
			origin string
		}{
			{"npm.corp.test", Inspect, "grant ar-1"},
			{"old.example.test", Deny, ""},
			{"val.example.test", Deny, ""},
			{"pinned.example.test", Passthrough, "grant ar-4"},
			{"a.extras.example.test", Inspect, "run r2 extra"},
		} {
			d := p.Decide(Query{Host: tc.host, Port: 443, Stage: StageConnect})
			if d.Action != tc.want || (d.Entry != nil && d.Entry.Origin.String() != tc.origin) {
				t.Errorf("%s: %v %+v", tc.host, d.Action, d.Entry)
			}
		}
		allow, pass := p.RunEntries()
		if len(allow) != 3 || len(pass) != 1 {
			t.Errorf("RunEntries = %d, %d", len(allow), len(pass))
		}
	})

	t.Run("strict validation of grants and extras", func(t *testing.T) {
		bad := []PolicyInput{
			{Grants: []Grant{{ID: "g", Tenant: "acme", Entry: Entry{Host: "*.com"}}}},
			{Grants: []Grant{{ID: "g", Tenant: "acme", Entry: Entry{Host: "10.0.0.1"}}}},
			{Grants: []Grant{{ID: "g", Tenant: "acme", Entry: Entry{Host: "10.0.0.1", AllowAddresses: []string{"10.0.0.1"}}}}},
			{Grants: []Grant{{ID: "g", Tenant: "acme", Entry: Entry{Preset: "pypi"}}}},
			{Grants: []Grant{{ID: "g", Tenant: "acme", Entry: Entry{Host: "x.example.test", Methods: []string{"BREW"}}}}},
			{Grants: []Grant{{ID: "g", Tenant: "globex", Entry: Entry{Host: "x.example.test"}}}},
			{Extras: []Entry{{Host: "other.example.test"}}},
			{Extras: []Entry{{Host: "*.example.test"}}},
			{Extras: []Entry{{Host: "*.extras.example.test"}, {Host: "a.b.extras.example.test", Paths: []string{"/../x"}}}},
			{Extras: []Entry{{Host: "localhost"}}},
		}
		for i, in := range bad {
			in.Policy, in.Tenant, in.Class = f.pol, "acme", "agent"
			if _, err := ResolvePolicy(in); err == nil {
				t.Errorf("case %d: no error for %+v %+v", i, in.Grants, in.Extras)
			}
		}
		// Another tenant's class does not permit extras at all.
		if _, err := ResolvePolicy(PolicyInput{Policy: f.pol, Tenant: "globex", Extras: []Entry{{Host: "exact.example.test"}}}); err == nil {
			t.Error("globex took an extra without run_extras")
		}
		if _, err := ResolvePolicy(PolicyInput{Policy: f.pol, Tenant: "nobody"}); err == nil {
			t.Error("unknown tenant resolved")
		}
	})
}

func TestEngineRuns(t *testing.T) {
	f := MustFixture(t, policyConfig, "acme", "globex")
	p, err := ResolvePolicy(PolicyInput{Policy: f.pol, Tenant: "acme", Run: "r1",
		Derived: nodeDerived})
	if err != nil {
		t.Fatal(err)
	}
	allow, pass := p.RunEntries()
	token := MustToken(t)
	run := Run{ID: "r1", Tenant: "acme", Class: "agent", TokenHash: HashToken(token), Entries: allow, Passthrough: pass}
	if err := f.engine.AddRun(run); err != nil {
		t.Fatal(err)
	}

	t.Run("run entries with their origin", func(t *testing.T) {
		tn, cl, a, _, ok := f.engine.RunEntries("r1")
		if !ok || tn != "acme" || cl != "agent" || len(a) != len(allow) || len(a) == 0 {
			t.Fatalf("RunEntries: %s %s %d of %d %v", tn, cl, len(a), len(allow), ok)
		}
		for _, en := range a {
			if en.Origin.Run != "r1" || en.Origin.String() == "" {
				t.Errorf("%s: origin %+v", en.Host, en.Origin)
			}
		}
		if _, _, _, _, ok := f.engine.RunEntries("nope"); ok {
			t.Error("an unknown run has entries")
		}
	})

	t.Run("run token identifies the run", func(t *testing.T) {
		for _, user := range []string{"acme", "acme/agent"} {
			id, err := f.engine.Identify(user, token)
			if err != nil || id != (Identity{Tenant: "acme", Class: "agent", Run: "r1"}) {
				t.Fatalf("%s: %+v %v", user, id, err)
			}
		}
		for _, user := range []string{"globex", "acme/validation", ""} {
			if _, err := f.engine.Identify(user, token); err == nil {
				t.Errorf("run token accepted as %q", user)
			}
		}
		// The tenant token still names the class without the run.
		if id, err := f.engine.Identify("acme", f.tokens["acme"]); err != nil || id.Run != "" {
			t.Fatalf("tenant token: %+v %v", id, err)
		}
	})
	runID := Identity{Tenant: "acme", Class: "agent", Run: "r1"}
	t.Run("run entries add to the class", func(t *testing.T) {
		q := Query{Identity: runID, Host: "registry.npm.example.test", Port: 443, Method: "GET", Path: "/x", Stage: StageRequest}
		if d := f.engine.Decide(q); d.Action != Allow || d.Entry.Origin.Run != "r1" {
			t.Fatalf("run entry: %+v", d)
		}
		q.Identity = acmeAgent
		if d := f.engine.Decide(q); d.Action != Deny {
			t.Fatalf("class without the run got the run's entry: %+v", d)
		}
		if d := f.engine.Decide(Query{Identity: runID, Host: "api.example.test", Port: 443, Stage: StageConnect}); d.Action != Inspect {
			t.Fatalf("class entry for the run: %+v", d)
		}
		forged := Identity{Tenant: "globex", Class: "agent", Run: "r1"}
		if d := f.engine.Decide(Query{Identity: forged, Host: "registry.npm.example.test", Port: 443, Stage: StageConnect}); d.Action != Deny {
			t.Fatalf("run entries under another tenant: %+v", d)
		}
	})
	t.Run("bad runs", func(t *testing.T) {
		for i, r := range []Run{
			{ID: "r1", Tenant: "acme", Class: "agent", TokenHash: HashToken(MustToken(t))},     // duplicate id
			{ID: "r9", Tenant: "acme", Class: "agent", TokenHash: HashToken(token)},            // duplicate token
			{ID: "r9", Tenant: "acme", Class: "agent", TokenHash: HashToken(f.tokens["acme"])}, // the tenant's token
			{ID: "r9", Tenant: "acme", Class: "nope", TokenHash: HashToken(MustToken(t))},      // unknown class
			{ID: "../x", Tenant: "acme", Class: "agent", TokenHash: HashToken(MustToken(t))},   // bad id
			{ID: "r9", Tenant: "acme", Class: "agent"},                                         // no token
			{ID: "r9", Tenant: "acme", Class: "agent", TokenHash: HashToken(MustToken(t)), Entries: []Entry{{Host: "*.com"}}},
			{ID: "r9", Tenant: "acme", Class: "agent", TokenHash: HashToken(MustToken(t)), Entries: []Entry{{Host: "192.168.1.1"}}},
		} {
			if err := f.engine.AddRun(r); err == nil {
				t.Errorf("case %d: AddRun accepted %+v", i, r)
			}
		}
	})
	t.Run("runs survive a reload and end", func(t *testing.T) {
		next, err := Compile(f.pol, f.token)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := next.Identify("acme", token); err == nil {
			t.Fatal("a fresh engine knows the run")
		}
		next.ShareRuns(f.engine)
		if _, err := next.Identify("acme", token); err != nil {
			t.Fatal("run lost on reload")
		}
		exp := MustToken(t)
		if err := next.AddRun(Run{ID: "r-exp", Tenant: "acme", Class: "agent", TokenHash: HashToken(exp), Expires: time.Now().Add(-time.Second)}); err != nil {
			t.Fatal(err)
		}
		if _, err := next.Identify("acme", exp); err == nil {
			t.Error("expired run identified")
		}
		if d := next.Decide(Query{Identity: Identity{Tenant: "acme", Class: "agent", Run: "r-exp"}, Host: "api.example.test", Port: 443}); d.Action != Deny || d.Reason != ReasonRunEnded {
			t.Errorf("expired run decided: %+v", d)
		}
		if !f.engine.RemoveRun("r1") || f.engine.RemoveRun("r1") {
			t.Fatal("RemoveRun")
		}
		if _, err := next.Identify("acme", token); err == nil {
			t.Error("removed run identified")
		}
		if d := next.Decide(Query{Identity: runID, Host: "api.example.test", Port: 443}); d.Reason != ReasonRunEnded {
			t.Errorf("removed run decided: %+v", d)
		}
	})
	t.Run("concurrent add, remove and decide", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for j := range 50 {
					id := "c" + strings.Repeat("x", i) + string(rune('a'+j%26))
					f.engine.AddRun(Run{ID: id, Tenant: "acme", Class: "agent", TokenHash: HashToken(id + "-token-0123456789")})
					f.engine.RemoveRun(id)
				}
			}()
			go func() {
				defer wg.Done()
				for range 200 {
					f.engine.Decide(Query{Identity: Identity{Tenant: "acme", Class: "agent", Run: "cxa"}, Host: "api.example.test", Port: 443})
				}
			}()
		}
		wg.Wait()
	})
}

func TestShippedPresets(t *testing.T) {
	shipped, err := loadPresets(presetdata.FS)
	if err != nil {
		t.Fatal(err)
	}
	var ps []*Preset
	for _, p := range shipped {
		ps = append(ps, p)
	}
	if len(ps) < 20 {
		t.Fatalf("%d presets", len(ps))
	}
	for _, want := range []string{"debian", "ubuntu", "alpine", "fedora", "rhel", "npm", "pypi", "go", "crates", "rubygems",
		"maven", "gradle", "nuget", "packagist", "github", "gitlab", "bitbucket", "anthropic", "openai"} {
		if presets[want] == nil {
			t.Errorf("no preset %q", want)
		}
	}
	// The npm, Go and Debian registries are only ever named through host slots.
	for _, p := range ps {
		for _, pe := range p.Entries {
			if (p.Name == "npm" || p.Name == "go" || p.Name == "debian") && pe.Host != "" {
				t.Errorf("preset %s names %s literally; use host_from", p.Name, pe.Host)
			}
			if len(pe.Methods) == 0 {
				t.Errorf("preset %s entry %s allows every method", p.Name, pe.Host+pe.HostFrom)
			}
		}
	}
	for _, slot := range []string{"npm_registry", "go_proxy", "go_sumdb", "debian_mirror"} {
		found := false
		for _, s := range PresetSlots() {
			found = found || s == slot
		}
		if !found {
			t.Errorf("no slot %s", slot)
		}
	}
}

func TestParsePresetBad(t *testing.T) {
	for name, text := range map[string]string{
		"unknown key":     "name: x\nversion: 1\nentries:\n  - host: a.example.test\n    prots: [1]\n",
		"no version":      "name: x\nentries:\n  - host: a.example.test\n",
		"host and slot":   "name: x\nversion: 1\nentries:\n  - host: a.example.test\n    host_from: y\n",
		"wide wildcard":   "name: x\nversion: 1\nentries:\n  - host: \"*.com\"\n",
		"deny range":      "name: x\nversion: 1\nentries:\n  - host: 127.0.0.1\n",
		"bad method":      "name: x\nversion: 1\nentries:\n  - host: a.example.test\n    methods: [BREW]\n",
		"paths and repo":  "name: x\nversion: 1\nentries:\n  - host: a.example.test\n    paths: [/a/]\n    repo_paths: true\n",
		"no entries":      "name: x\nversion: 1\n",
		"two documents":   "name: x\nversion: 1\nentries:\n  - host: a.example.test\n---\nname: y\n",
		"bad slot name":   "name: x\nversion: 1\nentries:\n  - host_from: Go-Proxy\n",
		"bad preset name": "name: X!\nversion: 1\nentries:\n  - host: a.example.test\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parsePreset([]byte(text), "x.yaml"); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func BenchmarkDecideRun(b *testing.B) {
	f := MustFixture(b, policyConfig, "acme", "globex")
	tok := MustToken(b)
	if err := f.engine.AddRun(Run{ID: "r1", Tenant: "acme", Class: "agent", TokenHash: HashToken(tok),
		Entries: []Entry{{Host: "run.example.test", Methods: []string{"GET"}}}}); err != nil {
		b.Fatal(err)
	}
	q := Query{Identity: Identity{Tenant: "acme", Class: "agent", Run: "r1"}, Host: "run.example.test", Port: 443, Method: "GET", Path: "/x", Stage: StageRequest}
	b.ReportAllocs()
	for b.Loop() {
		if f.engine.Decide(q).Action != Allow {
			b.Fatal("deny")
		}
	}
}
