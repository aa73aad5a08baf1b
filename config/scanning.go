package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// Scanning bounds what the scanner reads.
type Scanning struct {
	// MaxBodyBytes is the largest body scanned; default DefaultMaxBodyBytes.
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// OnOversize is what happens to a larger body: OnOversizeBlock (default) or
	// OnOversizeForwardTail (OnOversizeForward, its older name): see ForwardsOversize.
	OnOversize string `yaml:"on_oversize"`
	// MaxInflightBytes bounds the request bytes held for scanning at once,
	// across all requests; a request that finds no room within a few seconds
	// is refused (503, scan-busy). Default DefaultMaxInflightBytes.
	MaxInflightBytes ByteSize `yaml:"max_inflight_bytes"`
	// DecodeDepth is how many layers of base64, base64url, hex and percent
	// encoding the scanner peels: 0 its default (2), -1 none, at most MaxDecodeDepth.
	DecodeDepth int `yaml:"decode_depth"`
	// Timeout bounds one request's scan; 0: the scanner's default (10s). A
	// scan that times out refuses the request.
	Timeout Duration `yaml:"timeout"`
	// CleanCacheEntries bounds how many body texts found clean the scanner
	// remembers, so that a conversation's history, which an agent resends
	// on every turn, is not scanned again: 0 its default
	// (scanner.DefaultCleanCacheEntries, 2 MiB), -1 none.
	CleanCacheEntries int `yaml:"clean_cache_entries"`
	// TrailEntries bounds how many sandboxes × hosts the scanner remembers
	// the last pieces of requests' fields for, to find a token sent a
	// piece a request: 0 its default (scanner.DefaultTrailEntries, at most
	// 4 KiB each), -1 none.
	TrailEntries int `yaml:"trail_entries"`
	// RulePacks are extra gitleaks TOML rule packs (relative to the config
	// file), layered over the defaults and the shipped packs.
	RulePacks []string `yaml:"rule_packs"`
	// Actions by detection rule id (or "secret" for every secret rule, or
	// "injection" for the prompt-injection family, "exfil-image", "exfil-link",
	// "url-entropy-query", "exfil-hostname"): block, redact or alert.
	// Canaries always block.
	Actions map[string]scanner.Action `yaml:"actions"`
	// Bindings tie credentials to their own destinations, besides the shipped
	// ones (unless NoDefaultBindings).
	Bindings []scanner.Binding `yaml:"bindings"`
	// NoDefaultBindings drops the shipped bindings of common providers.
	NoDefaultBindings bool `yaml:"no_default_bindings"`
	// Tenants holds per-tenant overrides, by tenant name: their actions win over
	// the global ones, their bindings add to them.
	Tenants map[string]scanner.TenantPolicy `yaml:"tenants"`
}

// Policy returns the scanner's policy of these keys.
func (s *Scanning) Policy() scanner.Policy {
	return scanner.Policy{
		Actions:           s.Actions,
		Bindings:          s.Bindings,
		NoDefaultBindings: s.NoDefaultBindings,
		Tenants:           s.Tenants,
		ForwardOversize:   s.ForwardsOversize(),
	}
}

// ScannerOptions returns the options of the gateway's scanner from the
// scanning keys: rules (defaults, shipped packs, rule_packs relative to the
// config file), policy, limits, and the data directory's key and canaries.
// Without createKey a missing fingerprint key is not created (the scanner
// uses a per-process key).
func (c *Config) ScannerOptions(createKey bool) scanner.Options {
	packs := make([]string, len(c.Scanning.RulePacks))
	for i, p := range c.Scanning.RulePacks {
		packs[i] = c.AbsPath(p)
	}
	return scanner.Options{
		RulePacks: packs, Policy: c.Scanning.Policy(), DataDir: c.DataPath(), CreateKey: createKey,
		MaxBodyBytes:      int64(c.Scanning.MaxBodyBytes),
		DecodeDepth:       c.Scanning.DecodeDepth,
		Timeout:           time.Duration(c.Scanning.Timeout),
		CleanCacheEntries: c.Scanning.CleanCacheEntries,
		TrailEntries:      c.Scanning.TrailEntries,
	}
}

// MaxDecodeDepth bounds scanning.decode_depth: every layer multiplies work.
const MaxDecodeDepth = 8

// MaxCleanCacheEntries bounds scanning.clean_cache_entries: 256 MiB of
// entries.
const MaxCleanCacheEntries = 1 << 24

// MaxTrailEntries bounds scanning.trail_entries: 1 GiB of pieces.
const MaxTrailEntries = 1 << 18

// validateScanning checks the scanning keys beyond the body limit.
func (v *validator) scanning() {
	s := &v.c.Scanning
	if s.DecodeDepth < -1 || s.DecodeDepth > MaxDecodeDepth {
		v.fail("scanning.decode_depth", "got %d, want -1 (none), 0 (default) or up to %d", s.DecodeDepth, MaxDecodeDepth)
	}
	if s.Timeout < 0 {
		v.fail("scanning.timeout", "must not be negative")
	}
	if s.CleanCacheEntries < -1 || s.CleanCacheEntries > MaxCleanCacheEntries {
		v.fail("scanning.clean_cache_entries", "got %d, want -1 (none), 0 (default) or up to %d", s.CleanCacheEntries, MaxCleanCacheEntries)
	}
	if s.TrailEntries < -1 || s.TrailEntries > MaxTrailEntries {
		v.fail("scanning.trail_entries", "got %d, want -1 (none), 0 (default) or up to %d", s.TrailEntries, MaxTrailEntries)
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
		v.scanActions(key+".actions", t.Actions)
		v.scanBindings(key+".bindings", t.Bindings)
	}
}

func (v *validator) scanActions(key string, m map[string]scanner.Action) {
	for _, id := range slices.Sorted(maps.Keys(m)) {
		switch m[id] {
		case scanner.Block, scanner.Redact, scanner.Alert:
		default:
			// Decoding refuses other words; this is for configs built in code.
			v.fail(key+"."+id, "got %q, want %q, %q or %q", m[id], scanner.Block, scanner.Redact, scanner.Alert)
		}
		if strings.TrimSpace(id) == "" {
			v.fail(key, "empty rule id")
		}
	}
}

func (v *validator) scanBindings(key string, bs []scanner.Binding) {
	for i, b := range bs {
		k := fmt.Sprintf("%s[%d]", key, i)
		if strings.TrimSpace(b.Rule) == "" {
			v.fail(k+".rule", "must name a detection rule, such as github-pat")
		}
		if len(b.Hosts) == 0 {
			v.fail(k+".hosts", "must list at least one host")
		}
		for j, h := range b.Hosts {
			if _, err := rules.NormalizePattern(h); err != nil {
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

// ForwardsOversize reports whether a body over max_body_bytes has its first
// max_body_bytes scanned and the rest forwarded unchecked (with an incident),
// rather than refused.
func (s *Scanning) ForwardsOversize() bool {
	return s.OnOversize == OnOversizeForwardTail || s.OnOversize == OnOversizeForward
}
