package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// wantLines returns the "# want: " lines of a bad config, with FILE replaced by path.
func wantLines(t *testing.T, path string, data []byte) []string {
	t.Helper()
	var wants []string
	for line := range strings.Lines(string(data)) {
		if w, ok := strings.CutPrefix(strings.TrimSpace(line), "# want: "); ok {
			wants = append(wants, strings.ReplaceAll(w, "FILE", path))
		}
	}
	if len(wants) == 0 {
		t.Fatalf("%s has no '# want: ' line", path)
	}
	return wants
}

func TestLoadBad(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad configs: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			wants := wantLines(t, path, data)
			c, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want error", path, c)
			}
			for _, w := range wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			if strings.Contains(err.Error(), "do-not-put-secrets-here") {
				t.Errorf("error repeats a value that may be a secret:\n%v", err)
			}
		})
	}
}

func TestLoadGood(t *testing.T) {
	files, err := filepath.Glob("testdata/good/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no good configs: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := Load(path); err != nil {
				t.Fatalf("Load(%s): %v", path, err)
			}
		})
	}
}

func TestLoadFull(t *testing.T) {
	c, err := Load("testdata/good/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != "testdata/good/full.yaml" {
		t.Errorf("Path = %q", c.Path)
	}
	if c.Scanning.MaxBodyBytes != 10<<20 || c.Scanning.OnOversize != OnOversizeForward {
		t.Errorf("Scanning = %+v", c.Scanning)
	}
	if time.Duration(c.CA.LeafTTL) != 24*time.Hour || c.CA.PassphraseEnv != "SLUICE_CA_PASSPHRASE" {
		t.Errorf("CA = %+v", c.CA)
	}
	if got := c.Upstream.Hosts["mirror.internal.test"]; got != "198.51.100.7" {
		t.Errorf("upstream host = %q", got)
	}
	agent := c.Tenants["acme"].Classes["agent"]
	if len(agent.Allow) != 6 || len(agent.Passthrough) != 1 {
		t.Fatalf("agent = %+v", agent)
	}
	if e := agent.Allow[1]; e.Host != "*.githubusercontent.com" || !slices.Equal(e.Methods, []string{"GET"}) || e.Line != 23 {
		t.Errorf("allow[1] = %+v, want methods upper-cased and line 23", e)
	}
	if e := agent.Passthrough[0]; e.Line != 34 {
		t.Errorf("passthrough[0].Line = %d, want 34", e.Line)
	}
	if pm := c.Tenants["acme"].Classes["premerge"]; pm == nil || len(pm.Allow) != 0 {
		t.Errorf("premerge with nothing below = %+v, want an empty class", pm)
	}
	if got, want := c.TokenPath(c.Tenants["acme"]), filepath.Join("testdata", "good", "secrets", "acme.token"); got != want {
		t.Errorf("TokenPath = %q, want %q", got, want)
	}
	if got, want := c.ResolvePath(c.Upstream.ExtraRoots[0]), filepath.Join("testdata", "good", "upstream-ca.pem"); got != want {
		t.Errorf("ResolvePath = %q, want %q", got, want)
	}
	if got := c.TokenPath(c.Tenants["globex"]); got != "" {
		t.Errorf("TokenPath of an env tenant = %q, want empty", got)
	}
}

// TestPolicy: what rules compiles is the file's policy, classes and entry lines included.
func TestPolicy(t *testing.T) {
	c, err := Load("testdata/good/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := c.Policy()
	if p.File != c.Path || p.UpstreamHosts["mirror.internal.test"] != "198.51.100.7" || len(p.Tenants) != len(c.Tenants) {
		t.Fatalf("Policy() = %+v", p)
	}
	if got := p.Tenants["acme"].Classes["agent"]; got != c.Tenants["acme"].Classes["agent"] || got.Allow[1].Line != 23 {
		t.Errorf("acme's agent class = %+v, want the file's", got)
	}
	if probs := p.Check(); len(probs) != 0 {
		t.Errorf("Check() = %v", probs)
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte("# nothing\n"), "empty.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen.Proxy != DefaultProxyAddr || c.Listen.Admin != DefaultAdminAddr || c.DataDir != DefaultDataDir ||
		c.Scanning.MaxBodyBytes != DefaultMaxBodyBytes || c.Scanning.OnOversize != OnOversizeBlock || c.Version != CurrentVersion {
		t.Errorf("defaults not applied: %+v", c)
	}
	if len(c.Tenants) != 0 {
		t.Errorf("a config without tenants got tenants: %v", c.Tenants)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestDefault(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate(): %v", err)
	}
	if c.Path != "" || c.Listen.Proxy != "127.0.0.1:3128" || c.Listen.Admin != "127.0.0.1:8080" || c.DataDir != "./sluice-data" {
		t.Errorf("Default() = %+v", c)
	}
	d := c.Tenants[rules.DefaultTenant]
	if d == nil || d.TokenFile != "default.token" {
		t.Fatalf("default tenant = %+v", d)
	}
	if cl := d.Classes[rules.DefaultClass]; cl == nil || len(cl.Allow)+len(cl.Passthrough) != 0 {
		t.Errorf("default class is not deny-all: %+v", cl)
	}
	if got, want := c.TokenPath(d), filepath.Join("sluice-data", "default.token"); got != want {
		t.Errorf("TokenPath = %q, want %q (in the data directory)", got, want)
	}
}

// TestParseErrorLines pins the whole first line of the errors the contract names.
func TestParseErrorLines(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{
			name: "unknown key",
			yaml: "tenants:\n  acme:\n    token_file: a.token\n    classes:\n      agent:\n        allow:\n          - host: api.example.test\n            prots: [443]\n",
			want: `sluice.yaml:8: tenants.acme.classes.agent.allow[0].prots: unknown key "prots" (known keys here: allow_addresses, host, methods, paths, ports, preset, websocket)`,
		},
		{
			name: "duplicate tenant",
			yaml: "tenants:\n  acme:\n    token_file: a.token\n\n  acme:\n    token_file: b.token\n",
			want: `sluice.yaml:5: tenants.acme: duplicate key "acme" (first defined at line 2)`,
		},
		{
			name: "wrong type",
			yaml: "version: one\n",
			want: `sluice.yaml:1: version: want an integer, got "one"`,
		},
		{
			name: "bad host",
			yaml: "tenants:\n  acme:\n    token_file: a.token\n    classes:\n      agent:\n        allow:\n          - host: a.example.test\n          - host: b.example.test\n          - host: \"*.com\"\n",
			want: `sluice.yaml:9: tenants.acme.classes.agent.allow[2].host: bad host pattern "*.com": wider than a registrable domain`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "sluice.yaml")
			if err == nil {
				err = c.Validate()
			}
			if err == nil {
				t.Fatal("no error")
			}
			first, _, _ := strings.Cut(err.Error(), "\n")
			if !strings.HasPrefix(first, tt.want) {
				t.Errorf("error\n%s\nwant prefix\n%s", first, tt.want)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.File != "sluice.yaml" || fe.Line == 0 {
				t.Errorf("error is not a *FieldError with file and line: %#v", err)
			}
		})
	}
}

// TestValidateAllProblems checks that Validate reports every problem, not just the first.
func TestValidateAllProblems(t *testing.T) {
	c := &Config{
		Version: 3,
		Tenants: map[string]*Tenant{
			"acme": {TokenFile: "a", Classes: map[string]*rules.Class{"agent": {Allow: []rules.Entry{{Host: "*"}, {Host: "ok.example.test", Ports: []int{0}}}}}},
		},
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"version: unsupported version 3",
		"listen.proxy: must not be empty",
		"data_dir: must not be empty",
		"scanning.max_body_bytes: must be positive",
		"tenants.acme.classes.agent.allow[0].host: bad host pattern",
		"tenants.acme.classes.agent.allow[1].ports[0]: port 0 out of range",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\nlacks %q", err, want)
		}
	}
}

func TestParseAliasBomb(t *testing.T) {
	// Each level doubles; the walk must not expand aliases and the decoder refuses.
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x]\n")
	for i := 1; i < 40; i++ {
		b.WriteString("a" + itoa(i) + ": &a" + itoa(i) + " [*a" + itoa(i-1) + ", *a" + itoa(i-1) + "]\n")
	}
	done := make(chan error, 1)
	go func() { _, err := Parse([]byte(b.String()), "bomb.yaml"); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Parse of an alias bomb did not return")
	}
}

func itoa(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }
