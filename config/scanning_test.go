package config

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/scanner"
)

const scanBase = `tenants:
  acme:
    token_env: ACME_TOKEN
    classes: {agent: {}}
scanning:
`

func TestScanningGood(t *testing.T) {
	c, err := Parse([]byte(scanBase+`  decode_depth: 3
  timeout: 2s
  rule_packs: [extra.toml]
  actions: {generic-api-key: alert, github-pat: redact, exfil-image: alert}
  bindings:
    - rule: internal-token
      hosts: [api.internal.test, "*.git.internal.test"]
      headers: [X-Internal-Token]
  no_default_bindings: true
  tenants:
    acme:
      actions: {secret: redact}
      bindings: [{rule: github-pat, hosts: [ghe.acme.test]}]
`), "scan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s := c.Scanning
	if s.DecodeDepth != 3 || time.Duration(s.Timeout) != 2*time.Second || s.RulePacks[0] != "extra.toml" ||
		s.Actions["github-pat"] != scanner.Redact || s.Bindings[0].Headers[0] != "X-Internal-Token" || !s.NoDefaultBindings ||
		s.Tenants["acme"].Actions["secret"] != scanner.Redact || s.Tenants["acme"].Bindings[0].Hosts[0] != "ghe.acme.test" {
		t.Errorf("scanning = %+v", s)
	}
	if s.MaxBodyBytes != DefaultMaxBodyBytes || s.OnOversize != OnOversizeBlock {
		t.Errorf("defaults lost: %+v", s)
	}
	p := s.Policy()
	if p.Actions["exfil-image"] != scanner.Alert || len(p.Bindings) != 1 || !p.NoDefaultBindings ||
		p.Tenants["acme"].Actions["secret"] != scanner.Redact || p.ForwardOversize {
		t.Errorf("Policy() = %+v", p)
	}
	s.OnOversize = OnOversizeForward
	if !s.Policy().ForwardOversize {
		t.Error("on_oversize: forward does not forward")
	}
}

func TestScanningBad(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"depth", "  decode_depth: 9\n", "scan.yaml:6: scanning.decode_depth: got 9"},
		{"trail", "  trail_entries: -2\n", "scan.yaml:6: scanning.trail_entries: got -2"},
		{"depth negative", "  decode_depth: -2\n", "scan.yaml:6: scanning.decode_depth"},
		{"timeout", "  timeout: -1s\n", "scan.yaml:6: scanning.timeout: bad duration"},
		{"action", "  actions: {github-pat: drop}\n", `scan.yaml:6: scanning.actions.github-pat: got "drop"`},
		{"pack", "  rule_packs: [\"\"]\n", "scan.yaml:6: scanning.rule_packs[0]: empty path"},
		{"binding rule", "  bindings:\n    - hosts: [a.test]\n", "scan.yaml:7: scanning.bindings[0].rule: must name"},
		{"binding hosts", "  bindings:\n    - rule: x\n", "scan.yaml:7: scanning.bindings[0].hosts: must list"},
		{"binding host", "  bindings:\n    - rule: x\n      hosts: [\"*.com\"]\n", "scan.yaml:8: scanning.bindings[0].hosts[0]"},
		{"binding header", "  bindings:\n    - rule: x\n      hosts: [a.test]\n      headers: [Proxy-Authorization]\n", "scan.yaml:9: scanning.bindings[0].headers[0]: Proxy-Authorization never travels"},
		{"unknown tenant", "  tenants:\n    globex: {}\n", `scan.yaml:7: scanning.tenants.globex: no tenant "globex"`},
		{"tenant action", "  tenants:\n    acme:\n      actions: {x: maybe}\n", `scan.yaml:8: scanning.tenants.acme.actions.x: got "maybe"`},
		{"unknown key", "  decode: 2\n", "scan.yaml:6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(scanBase+tc.yaml), "scan.yaml")
			if err == nil {
				err = c.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestScannerOptions: rule packs are found beside the config file, the keys
// reach the scanner's options, and the key is created only when asked.
func TestScannerOptions(t *testing.T) {
	c, err := Parse([]byte(scanBase+"  rule_packs: [packs/extra.yaml]\n  decode_depth: 3\n  timeout: 2s\n  on_oversize: forward\n  clean_cache_entries: -1\n  trail_entries: 64\n"), "/etc/sluice/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := c.ScannerOptions(false)
	if len(o.RulePacks) != 1 || o.RulePacks[0] != "/etc/sluice/packs/extra.yaml" || o.DecodeDepth != 3 || o.Timeout != 2*time.Second || o.CleanCacheEntries != -1 || o.TrailEntries != 64 ||
		!o.Policy.ForwardOversize || o.CreateKey || o.DataDir != c.DataPath() {
		t.Fatalf("options %+v", o)
	}
	if !c.ScannerOptions(true).CreateKey {
		t.Error("createKey not passed on")
	}
}
