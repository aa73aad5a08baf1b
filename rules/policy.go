// Package rules holds Sluice's policy model (tenants, launch classes, entries, presets,
// runs and grants), its compilation and the deny-by-default Decide.
package rules

import (
	"slices"
	"strings"
	"time"
)

// Names the embedded default policy uses.
const (
	DefaultTenant = "default"
	DefaultClass  = "agent"
)

// Policy is the policy model as the config file states it, as plain data: the tenants
// and their launch classes, the preset host slots and the static upstream resolutions.
// It holds no secrets: Compile takes the tenants' tokens from a function.
type Policy struct {
	// File names where the policy was written, for the provenance of its entries
	// (Origin.File); "" for a policy built in code.
	File string
	// Tenants by name. No tenants means nobody is let through; a nil tenant has no
	// classes.
	Tenants map[string]*Tenant
	// PresetHosts fills the host slots that presets read with host_from (presets.hosts in
	// the config file; see PresetSlots). An unset slot contributes nothing to the presets
	// that read it.
	PresetHosts map[string][]string
	// UpstreamHosts resolves host names statically (host -> IP literal), before DNS
	// (upstream.hosts in the config file).
	UpstreamHosts map[string]string
}

// Tenant is one customer's policy: its launch classes. Its token, CA and credentials
// are configured beside it, not here.
type Tenant struct {
	// Classes are the launch classes by name ("agent", "validation", ...).
	Classes map[string]*Class
	// Mode is ModeShadow to record the policy's refusals of every class as
	// would-refuse and let the requests through; "" or ModeEnforce: refuse.
	Mode string
	// TokenClasses are the classes a client holding the tenant token may name as
	// TENANT/CLASS. Empty: DefaultClass only, so that a sandbox given the tenant
	// token cannot pick a broader class; a run token carries its own class.
	TokenClasses []string
}

// tokenSelects reports whether the tenant token may select class.
func (t *Tenant) tokenSelects(class string) bool {
	if len(t.TokenClasses) == 0 {
		return class == DefaultClass
	}
	return slices.Contains(t.TokenClasses, class)
}

// Class is the policy of one launch class. A class without entries denies everything.
type Class struct {
	// Allow entries are inspected (MITM for HTTPS) and checked per request.
	Allow []Entry `yaml:"allow"`
	// Passthrough entries are tunnelled blind: host and port enforced, never inspected.
	Passthrough []Entry `yaml:"passthrough"`
	// Derive says what a run of this class may get from its repository. Zero: nothing.
	Derive DeriveConfig `yaml:"derive"`
	// RunExtras are host patterns a run's own extra entries must fall within (an exact
	// host, or a wildcard inside a listed wildcard). Empty: a run brings no extras.
	RunExtras []string `yaml:"run_extras"`
	// OnDeny is OnDenyHold to hold a refused CONNECT or request open while a reviewer
	// decides the access request it files; "" or OnDenyRefuse: refuse at once.
	OnDeny string `yaml:"on_deny"`
	// HoldTimeout bounds a hold (at most MaxHoldTimeout). Zero: DefaultHoldTimeout.
	HoldTimeout time.Duration `yaml:"hold_timeout"`
	// Mode is ModeShadow to record this class's policy refusals as would-refuse and let
	// the requests through; "" or ModeEnforce: refuse.
	Mode string `yaml:"mode"`
}

// DeriveConfig limits what derivation from a run's repository may add to its policy.
type DeriveConfig struct {
	// Presets the repository's manifests and git remote may select (the package
	// ecosystems and git hosts, by preset name). A preset derived but not listed is
	// reported, not applied. Empty: derivation adds nothing.
	Presets []string `yaml:"presets"`
}

// Entry lets one host pattern through, optionally narrowed by port, method and path.
type Entry struct {
	// Host is an exact host, an IP literal or "*.suffix" (one or more labels below suffix,
	// never the suffix itself). Exactly one of Host and Preset.
	Host string `yaml:"host" json:"host,omitempty"`
	// Ports allowed; empty means 443 and 80.
	Ports []int `yaml:"ports" json:"ports,omitempty"`
	// Methods allowed, stored upper-case; empty means any.
	Methods []string `yaml:"methods" json:"methods,omitempty"`
	// Paths are allowed path prefixes (decoded form, e.g. "/v1/"); empty means any.
	Paths []string `yaml:"paths" json:"paths,omitempty"`
	// Preset names a shipped set of entries.
	Preset string `yaml:"preset" json:"preset,omitempty"`
	// WebSocket allows WebSocket upgrades through this entry.
	WebSocket bool `yaml:"websocket" json:"websocket,omitempty"`
	// AllowAddresses are IPs or CIDRs inside the dialer's deny ranges (an internal mirror
	// at 10.1.2.3, say) that this entry may dial: an explicit opt-in.
	AllowAddresses []string `yaml:"allow_addresses" json:"allow_addresses,omitempty"`
	// Line is the entry's line in the config file (0 when unknown), for errors and
	// provenance.
	Line int `yaml:"-" json:"line,omitempty"`
	// Origin says where the entry came from (config, preset, derivation, grant, run);
	// set by Compile and ResolvePolicy.
	Origin Origin `yaml:"-" json:"origin"`
}

// UpperMethods stores methods upper-case and trimmed, as Entry.Methods documents
// (config does it when it decodes a file).
func UpperMethods(ms []string) {
	for i, m := range ms {
		ms[i] = strings.ToUpper(strings.TrimSpace(m))
	}
}
