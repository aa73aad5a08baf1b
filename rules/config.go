// Package rules holds Sluice's policy model: strict loading of the config file and the
// deny-by-default engine that decides, per tenant and launch class, what may leave.
package rules

import (
	"fmt"
	"os"
	"path/filepath"
)

// Defaults of the embedded configuration (see Default).
const (
	CurrentVersion      = 1
	DefaultProxyAddr    = "127.0.0.1:3128"
	DefaultAdminAddr    = "127.0.0.1:8080"
	DefaultDataDir      = "./sluice-data"
	DefaultMaxBodyBytes = ByteSize(10 << 20)
	// DefaultMaxInflightBytes bounds the request bytes held for scanning at
	// once, across all requests.
	DefaultMaxInflightBytes = ByteSize(256 << 20)
	DefaultTenant           = "default"
	DefaultClass            = "agent"
	DefaultTokenFile        = "default.token"

	OnOversizeBlock   = "block"
	OnOversizeForward = "forward"
)

// Config is the whole configuration file as plain data. It holds no runtime state and no
// secrets: tokens and passphrases are referenced by file or environment variable name.
type Config struct {
	// Version of the file format: 1 is current, 0 (absent) is read as 1.
	Version int `yaml:"version"`
	// Listen holds the listener addresses.
	Listen Listen `yaml:"listen"`
	// DataDir holds CAs, tokens and the store; default DefaultDataDir.
	DataDir string `yaml:"data_dir"`
	// Upstream configures how the gateway reaches upstream servers.
	Upstream Upstream `yaml:"upstream"`
	// Scanning bounds what the scanner reads.
	Scanning Scanning `yaml:"scanning"`
	// CA configures the tenant CAs.
	CA CAConfig `yaml:"ca"`
	// Store configures the incident store.
	Store StoreConfig `yaml:"store"`
	// Presets configures the shipped presets (rules/presets).
	Presets PresetsConfig `yaml:"presets"`
	// Alerts configures webhook alerts for incidents.
	Alerts AlertsConfig `yaml:"alerts"`
	// Dashboard configures the dashboard's users and sessions.
	Dashboard DashboardConfig `yaml:"dashboard"`
	// Tenants by name. No tenants means nobody is let through.
	Tenants map[string]*Tenant `yaml:"tenants"`

	// Path is the file the config came from ("" for the embedded default); relative paths
	// (token_file, extra_roots, passphrase_file, data_dir) resolve against its directory.
	Path string `yaml:"-"`

	// lines maps a key path ("tenants.acme.classes.agent.allow[2].host") to its line in the
	// file, for error messages; nil for a config built in code.
	lines map[string]int
}

// Listen holds the listener addresses (host:port).
type Listen struct {
	// Proxy is the proxy listener; default DefaultProxyAddr.
	Proxy string `yaml:"proxy"`
	// Admin is the dashboard and API listener; default DefaultAdminAddr.
	Admin string `yaml:"admin"`
}

// Upstream configures how the gateway reaches upstream servers.
type Upstream struct {
	// ExtraRoots are PEM files trusted for upstream TLS besides the system roots.
	ExtraRoots []string `yaml:"extra_roots"`
	// Hosts resolves names statically (host -> IP literal) before DNS.
	Hosts map[string]string `yaml:"hosts"`
}

// Scanning bounds what the scanner reads.
type Scanning struct {
	// MaxBodyBytes is the largest body scanned; default DefaultMaxBodyBytes.
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// OnOversize is what happens to a larger body: OnOversizeBlock (default) or
	// OnOversizeForward.
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
	// RulePacks are extra gitleaks TOML rule packs (relative to the config
	// file), layered over the defaults and the shipped packs.
	RulePacks []string `yaml:"rule_packs"`
	// Actions by detection rule id (or "secret" for every secret rule,
	// "injection" for the prompt-injection family, or "exfil-image",
	// "exfil-link", "url-entropy-query", "exfil-hostname"): ScanBlock,
	// ScanRedact or ScanAlert. Canaries always block.
	Actions map[string]string `yaml:"actions"`
	// Bindings tie credentials to their own destinations, besides the shipped
	// ones (unless NoDefaultBindings).
	Bindings []ScanBinding `yaml:"bindings"`
	// NoDefaultBindings drops the shipped bindings of common providers.
	NoDefaultBindings bool `yaml:"no_default_bindings"`
	// Tenants holds per-tenant overrides, by tenant name.
	Tenants map[string]*ScanTenant `yaml:"tenants"`
}

// CAConfig configures the tenant CAs.
type CAConfig struct {
	// PassphraseFile holds the passphrase that encrypts CA keys; at most one of
	// PassphraseFile and PassphraseEnv. Neither: keys are stored unencrypted (mode 0600).
	PassphraseFile string `yaml:"passphrase_file"`
	// PassphraseEnv names the environment variable holding the passphrase.
	PassphraseEnv string `yaml:"passphrase_env"`
	// LeafTTL is the lifetime of leaf certificates; 0 means the ca package's default.
	LeafTTL Duration `yaml:"leaf_ttl"`
}

// PresetsConfig configures the shipped presets.
type PresetsConfig struct {
	// Hosts fills the host slots that presets read with host_from (see PresetSlots):
	// npm_registry, go_proxy, go_sumdb, debian_mirror and others. An unset slot
	// contributes nothing to the presets that read it.
	Hosts map[string][]string `yaml:"hosts"`
}

// Tenant is one customer of the gateway, with its own token, CA and policy.
type Tenant struct {
	// TokenFile holds the tenant token; exactly one of TokenFile and TokenEnv.
	// Relative to the config file's directory (see Config.TokenPath).
	TokenFile string `yaml:"token_file"`
	// TokenEnv names the environment variable holding the tenant token.
	TokenEnv string `yaml:"token_env"`
	// Classes are the launch classes by name ("agent", "validation", ...).
	Classes map[string]*Class `yaml:"classes"`
	// Credentials are secrets the tenant's sandboxes get as phantoms, swapped for the
	// real ones only towards their bound hosts (see credentials.go).
	Credentials []Credential `yaml:"credentials"`
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

// Default returns the embedded configuration: default listeners and data directory, and
// one tenant "default" whose token file "default.token" lies in the data directory (cmd
// creates it) with a deny-all class "agent".
func Default() *Config {
	c := &Config{
		Version: CurrentVersion,
		Tenants: map[string]*Tenant{
			DefaultTenant: {
				TokenFile: DefaultTokenFile,
				Classes:   map[string]*Class{DefaultClass: {}},
			},
		},
	}
	c.applyDefaults()
	return c
}

// applyDefaults fills in what the file left out. A key present in the file keeps its
// value, even an empty one, so that Validate can complain about it.
func (c *Config) applyDefaults() {
	set := func(key string, apply func()) {
		if _, ok := c.lines[key]; !ok {
			apply()
		}
	}
	set("version", func() {
		if c.Version == 0 {
			c.Version = CurrentVersion
		}
	})
	set("listen.proxy", func() { c.Listen.Proxy = DefaultProxyAddr })
	set("listen.admin", func() { c.Listen.Admin = DefaultAdminAddr })
	set("data_dir", func() { c.DataDir = DefaultDataDir })
	set("scanning.max_body_bytes", func() { c.Scanning.MaxBodyBytes = DefaultMaxBodyBytes })
	set("scanning.on_oversize", func() { c.Scanning.OnOversize = OnOversizeBlock })
	set("scanning.max_inflight_bytes", func() { c.Scanning.MaxInflightBytes = DefaultMaxInflightBytes })
	set("store.retention", func() { c.Store.Retention = DefaultRetention })
	set("dashboard.session_ttl", func() { c.Dashboard.SessionTTL = DefaultSessionTTL })
	for _, t := range c.Tenants {
		if t == nil {
			continue
		}
		for name, cl := range t.Classes {
			if cl == nil {
				t.Classes[name] = &Class{} // "validation:" with nothing below: deny-all
			}
		}
	}
}

// Load reads, parses and validates the config file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// ResolvePath returns p resolved against the directory of the config file: unchanged when
// absolute or when the config came from no file.
func (c *Config) ResolvePath(p string) string {
	if p == "" || filepath.IsAbs(p) || c.Path == "" {
		return p
	}
	return filepath.Join(filepath.Dir(c.Path), p)
}

// DataPath returns the data directory, resolved against the config file's directory.
func (c *Config) DataPath() string { return c.ResolvePath(c.DataDir) }

// TokenPath returns where the tenant's token file is: resolved against the config file's
// directory, or, for a config from no file (the embedded default), against the data
// directory. "" when the tenant reads its token from the environment.
func (c *Config) TokenPath(t *Tenant) string {
	if t == nil || t.TokenFile == "" {
		return ""
	}
	if c.Path == "" && !filepath.IsAbs(t.TokenFile) {
		return filepath.Join(c.DataPath(), t.TokenFile)
	}
	return c.ResolvePath(t.TokenFile)
}
