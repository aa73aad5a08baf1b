// Package config owns Sluice's one config file: defaults, strict YAML decoding with
// file:line errors, units and validation; it hands each component its plain options.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-egress/sluice/rules"
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
	DefaultTokenFile        = "default.token"

	OnOversizeBlock = "block"
	// OnOversizeForwardTail scans the first max_body_bytes of a larger body
	// and forwards the rest unchecked, with an incident saying so.
	OnOversizeForwardTail = "forward-unscanned-tail"
	// OnOversizeForward is the older name of OnOversizeForwardTail.
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
	CA CA `yaml:"ca"`
	// Store configures the incident store.
	Store Store `yaml:"store"`
	// Presets configures the shipped presets (rules/presets).
	Presets Presets `yaml:"presets"`
	// Alerts configures webhook alerts for incidents.
	Alerts Alerts `yaml:"alerts"`
	// Dashboard configures the dashboard's users and sessions.
	Dashboard Dashboard `yaml:"dashboard"`
	// Limits bound time, sizes and connections per client, tenant and request (limits.go).
	Limits Limits `yaml:"limits"`
	// HTTP2 bounds clients speaking HTTP/2 inside inspected tunnels (limits.go).
	HTTP2 HTTP2 `yaml:"http2"`
	// DNS configures the sandboxes' resolver and their source addresses (dns.go).
	DNS DNS `yaml:"dns"`
	// Review configures refusals and the sandboxes' access requests (review.go).
	Review Review `yaml:"review"`
	// TLS configures the TLS the gateway terminates for sandboxes (tls.go).
	TLS TLS `yaml:"tls"`
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
	// DNS is the sandboxes' resolver (UDP and TCP); "" is off (see dns.go).
	DNS string `yaml:"dns"`
	// TransparentHTTP and TransparentTLS take sandbox connections redirected to the
	// gateway (ports 80 and 443), identified by source address; "" is off.
	TransparentHTTP string `yaml:"transparent_http"`
	TransparentTLS  string `yaml:"transparent_tls"`
}

// Upstream configures how the gateway reaches upstream servers.
type Upstream struct {
	// ExtraRoots are PEM files trusted for upstream TLS besides the system roots.
	ExtraRoots []string `yaml:"extra_roots"`
	// Hosts resolves names statically (host -> IP literal) before DNS.
	Hosts map[string]string `yaml:"hosts"`
	// Deny lists more address ranges (CIDRs or single addresses) the gateway never dials,
	// besides its built-in ones (loopback, private, link-local, metadata, …), which it
	// keeps: see DenyRanges.
	Deny []string `yaml:"deny"`
}

// CA configures the tenant CAs.
type CA struct {
	// PassphraseFile holds the passphrase that encrypts CA keys; at most one of
	// PassphraseFile and PassphraseEnv. Neither: keys are stored unencrypted (mode 0600).
	PassphraseFile string `yaml:"passphrase_file"`
	// PassphraseEnv names the environment variable holding the passphrase.
	PassphraseEnv string `yaml:"passphrase_env"`
	// LeafTTL is the lifetime of leaf certificates; 0 means the ca package's default.
	LeafTTL Duration `yaml:"leaf_ttl"`
}

// Presets configures the shipped presets.
type Presets struct {
	// Hosts fills the host slots that presets read with host_from (see rules.PresetSlots):
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
	Classes map[string]*rules.Class `yaml:"classes"`
	// Credentials are secrets the tenant's sandboxes get as phantoms, swapped for the
	// real ones only towards their bound hosts (see credentials.go).
	Credentials []Credential `yaml:"credentials"`
	// StepCA, when set, keeps the tenant's root in step-ca: each replica takes
	// short-lived intermediates from it (stepca.go). Nil: the root is local.
	StepCA *StepCA `yaml:"step_ca"`
	// Mode is rules.ModeShadow to let every class's policy refusals through as
	// would-refuse incidents (onboarding); "" or enforce: refuse.
	Mode string `yaml:"mode"`
	// TokenClasses are the classes the tenant token may select as TENANT/CLASS in
	// the proxy credentials. Empty: the default class (agent) only; other classes
	// are reached with run tokens (POST /api/runs).
	TokenClasses []string `yaml:"token_classes"`
}

// Default returns the embedded configuration: default listeners and data directory, and
// one tenant "default" whose token file "default.token" lies in the data directory (Open
// creates it) with a deny-all class "agent".
func Default() *Config {
	c := &Config{
		Version: CurrentVersion,
		Tenants: map[string]*Tenant{
			rules.DefaultTenant: {
				TokenFile: DefaultTokenFile,
				Classes:   map[string]*rules.Class{rules.DefaultClass: {}},
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
	set("store.incident_timeout", func() { c.Store.IncidentTimeout = DefaultIncidentTimeout })
	set("dashboard.session_ttl", func() { c.Dashboard.SessionTTL = DefaultSessionTTL })
	set("tls.sandbox_key_exchange", func() { c.TLS.SandboxKeyExchange = KeyExchangePostQuantum })
	for _, t := range c.Tenants {
		if t == nil {
			continue
		}
		for name, cl := range t.Classes {
			if cl == nil {
				t.Classes[name] = &rules.Class{} // "validation:" with nothing below: deny-all
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

// Policy returns the policy model of the config, for rules.Compile and
// rules.ResolvePolicy. It shares the classes with c: neither may be changed afterwards.
func (c *Config) Policy() *rules.Policy {
	p := &rules.Policy{File: c.Path, PresetHosts: c.Presets.Hosts, UpstreamHosts: c.Upstream.Hosts}
	if c.Tenants != nil {
		p.Tenants = make(map[string]*rules.Tenant, len(c.Tenants))
	}
	for name, t := range c.Tenants {
		if t == nil {
			p.Tenants[name] = nil
			continue
		}
		p.Tenants[name] = &rules.Tenant{Classes: t.Classes, Mode: t.Mode, TokenClasses: t.TokenClasses}
	}
	return p
}

// Compile validates c and compiles its policy, reading the tenants' tokens. A config
// changed after loading (a flag overriding a key) is checked again.
func (c *Config) Compile() (*rules.Engine, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return rules.Compile(c.Policy(), c.Token)
}

// Token reads the token of the named tenant from its token_file or token_env, trimmed,
// for rules.Compile. Errors name where the token was looked for, never the token.
func (c *Config) Token(tenant string) (string, error) {
	t := c.Tenants[tenant]
	if t == nil {
		return "", fmt.Errorf("no tenant %q", tenant)
	}
	src, key := "token_env "+t.TokenEnv, "tenants."+tenant+".token_env"
	path := ""
	if t.TokenEnv == "" {
		path = c.TokenPath(t)
		src, key = "token_file "+path, "tenants."+tenant+".token_file"
	}
	// Errors name the config line that points at the token (and never the token).
	fail := func(format string, args ...any) error {
		return &FieldError{File: c.Path, Line: c.lineOf(key), Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	tok, err := readRef(path, t.TokenEnv, os.Getenv)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fail("%s does not exist (make one: sluice token new --tenant %s --out %s)", path, tenant, path)
	}
	if err != nil {
		return "", fail("%v", err)
	}
	tok = strings.TrimSpace(tok)
	switch {
	case tok == "":
		return "", fail("%s: empty token", src)
	case len(tok) < rules.MinTokenLen:
		return "", fail("%s: token shorter than %d characters", src, rules.MinTokenLen)
	}
	return tok, nil
}
