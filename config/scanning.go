package rules

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Scan actions a policy may give a detection rule (scanning.actions).
const (
	ScanBlock  = "block"
	ScanRedact = "redact"
	ScanAlert  = "alert"
)

// MaxDecodeDepth bounds scanning.decode_depth: every layer multiplies work.
const MaxDecodeDepth = 8

// ScanBinding ties a credential found by a detection rule to the hosts where
// it belongs: there, in one of Headers, it passes without an incident.
type ScanBinding struct {
	// Rule is the detection rule id ("github-pat").
	Rule string `yaml:"rule"`
	// Hosts are exact hosts or "*.suffix" patterns, as in allow entries.
	Hosts []string `yaml:"hosts"`
	// Headers where it may travel; empty means Authorization.
	Headers []string `yaml:"headers"`
}

// ScanTenant is one tenant's scanning overrides.
type ScanTenant struct {
	// Actions by rule id (see Scanning.Actions); they win over the global ones.
	Actions map[string]string `yaml:"actions"`
	// Bindings are added to the global ones.
	Bindings []ScanBinding `yaml:"bindings"`
}

// validateScanning checks the scanning keys beyond the body limit.
func (v *validator) scanning() {
	s := &v.c.Scanning
	if s.DecodeDepth < -1 || s.DecodeDepth > MaxDecodeDepth {
		v.fail("scanning.decode_depth", "got %d, want -1 (none), 0 (default) or up to %d", s.DecodeDepth, MaxDecodeDepth)
	}
	if s.Timeout < 0 {
		v.fail("scanning.timeout", "must not be negative")
	}
	for i, p := range s.RulePacks {
		if strings.TrimSpace(p) == "" {
			v.fail(fmt.Sprintf("scanning.rule_packs[%d]", i), "empty path")
		}
	}
	v.scanActions("scanning.actions", s.Actions)
	v.scanBindings("scanning.bindings", s.Bindings)
	for _, tn := range slices.Sorted(maps.Keys(s.Tenants)) {
		key := "scanning.tenants." + tn
		if _, ok := v.c.Tenants[tn]; !ok {
			v.fail(key, "no tenant %q is defined under tenants", tn)
		}
		t := s.Tenants[tn]
		if t == nil {
			continue
		}
		v.scanActions(key+".actions", t.Actions)
		v.scanBindings(key+".bindings", t.Bindings)
	}
}

func (v *validator) scanActions(key string, m map[string]string) {
	for _, id := range slices.Sorted(maps.Keys(m)) {
		switch m[id] {
		case ScanBlock, ScanRedact, ScanAlert:
		default:
			v.fail(key+"."+id, "got %q, want %q, %q or %q", m[id], ScanBlock, ScanRedact, ScanAlert)
		}
		if strings.TrimSpace(id) == "" {
			v.fail(key, "empty rule id")
		}
	}
}

func (v *validator) scanBindings(key string, bs []ScanBinding) {
	for i, b := range bs {
		k := fmt.Sprintf("%s[%d]", key, i)
		if strings.TrimSpace(b.Rule) == "" {
			v.fail(k+".rule", "must name a detection rule, such as github-pat")
		}
		if len(b.Hosts) == 0 {
			v.fail(k+".hosts", "must list at least one host")
		}
		for j, h := range b.Hosts {
			if _, err := parseHostPattern(h); err != nil {
				v.fail(fmt.Sprintf("%s.hosts[%d]", k, j), "%v", err)
			}
		}
		for j, h := range b.Headers {
			if h == "" || strings.ContainsAny(h, " \t:\r\n") {
				v.fail(fmt.Sprintf("%s.headers[%d]", k, j), "bad header name %q", h)
			} else if strings.EqualFold(h, "Proxy-Authorization") {
				v.fail(fmt.Sprintf("%s.headers[%d]", k, j), "Proxy-Authorization never travels upstream")
			}
		}
	}
}
