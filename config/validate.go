package rules

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	// nameRE is the shape of tenant and class names: they appear in user names, paths and
	// metrics labels.
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	// envRE is the shape of an environment variable name.
	envRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// knownMethods are the methods an entry may name (RFC 9110 and PATCH; CONNECT is not a
// request an allow entry could let through, it is what opens the tunnel).
var knownMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
	"DELETE": true, "OPTIONS": true, "TRACE": true,
}

// Validate checks every value and returns all problems at once (errors.Join of
// *FieldError), each naming file, line and key, as in
// `sluice.yaml:12: tenants.acme.classes.agent.allow[2].host: bad host pattern "*.com": ...`.
func (c *Config) Validate() error {
	v := validator{c: c}
	v.config()
	// In file order, as an editor would walk them.
	slices.SortStableFunc(v.errs, func(a, b error) int {
		return a.(*FieldError).Line - b.(*FieldError).Line
	})
	return errors.Join(v.errs...)
}

type validator struct {
	c    *Config
	errs []error
}

func (v *validator) fail(key, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{File: v.c.Path, Line: v.c.lineOf(key), Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) config() {
	c := v.c
	if c.Version != 0 && c.Version != CurrentVersion {
		v.fail("version", "unsupported version %d (this build reads 1)", c.Version)
	}
	v.addr("listen.proxy", c.Listen.Proxy)
	v.addr("listen.admin", c.Listen.Admin)
	if c.DataDir == "" {
		v.fail("data_dir", "must not be empty")
	}
	for i, r := range c.Upstream.ExtraRoots {
		if strings.TrimSpace(r) == "" {
			v.fail(fmt.Sprintf("upstream.extra_roots[%d]", i), "empty path")
		}
	}
	v.upstreamHosts()
	if c.Scanning.MaxInflightBytes <= 0 {
		v.fail("scanning.max_inflight_bytes", "must be positive, such as 256MiB")
	}
	if c.Scanning.MaxBodyBytes <= 0 {
		v.fail("scanning.max_body_bytes", "must be positive, such as 10MiB")
	}
	switch c.Scanning.OnOversize {
	case OnOversizeBlock, OnOversizeForward:
	default:
		v.fail("scanning.on_oversize", "got %q, want %q or %q", c.Scanning.OnOversize, OnOversizeBlock, OnOversizeForward)
	}
	v.scanning()
	if c.CA.PassphraseFile != "" && c.CA.PassphraseEnv != "" {
		v.fail("ca.passphrase_env", "set passphrase_file or passphrase_env, not both")
	}
	if c.CA.PassphraseEnv != "" && !envRE.MatchString(c.CA.PassphraseEnv) {
		v.fail("ca.passphrase_env", "bad environment variable name %q", c.CA.PassphraseEnv)
	}
	if c.CA.LeafTTL < 0 {
		v.fail("ca.leaf_ttl", "must not be negative")
	}
	v.storeConfig()
	v.dashboard()
	v.alerts()
	v.presetHosts()
	for _, tn := range slices.Sorted(maps.Keys(c.Tenants)) {
		v.tenant(tn, c.Tenants[tn])
	}
}

// presetHosts checks presets.hosts: known slots, valid host patterns outside the deny
// ranges (an internal mirror needs an explicit entry with allow_addresses instead).
func (v *validator) presetHosts() {
	slots := PresetSlots()
	for _, slot := range slices.Sorted(maps.Keys(v.c.Presets.Hosts)) {
		key := "presets.hosts." + slot
		if !slices.Contains(slots, slot) {
			v.fail(key, "unknown host slot %q (known: %s)", slot, strings.Join(slots, ", "))
			continue
		}
		for i, h := range v.c.Presets.Hosts[slot] {
			k := fmt.Sprintf("%s[%d]", key, i)
			hp, err := parseHostPattern(h)
			if err != nil {
				v.fail(k, "%v", err)
				continue
			}
			if why := deniedHost(hp); why != "" {
				v.fail(k, "%q is %s, inside the dialer's deny ranges; allow an internal mirror with its own entry and allow_addresses", h, why)
			}
		}
	}
}

func (v *validator) addr(key, a string) {
	if a == "" {
		v.fail(key, "must not be empty (host:port)")
		return
	}
	_, port, err := net.SplitHostPort(a)
	if err != nil {
		v.fail(key, "bad address %q: want host:port", a)
		return
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		v.fail(key, "bad port in %q", a)
	}
}

func (v *validator) upstreamHosts() {
	seen := map[string]string{}
	for _, h := range slices.Sorted(maps.Keys(v.c.Upstream.Hosts)) {
		key := "upstream.hosts." + h
		n, err := NormalizeHost(h)
		if err != nil {
			v.fail(key, "%v", err)
		} else if _, err := netip.ParseAddr(n); err == nil {
			v.fail(key, "%q is an IP address already; list host names", h)
		} else if other, dup := seen[n]; dup {
			v.fail(key, "%q is the same host as %q", h, other)
		} else {
			seen[n] = h
		}
		if _, err := parseAddr(v.c.Upstream.Hosts[h]); err != nil {
			v.fail(key, "%v", err)
		}
	}
}

// parseAddr parses an IP literal for upstream.hosts: no zone, IPv4-mapped unmapped.
func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("bad IP address %q: want an IP literal such as 198.51.100.7", s)
	}
	return a.Unmap(), nil
}

// parsePrefix parses an allow_addresses item: an IP (a single-address prefix) or a CIDR.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("bad CIDR %q: %v", s, err)
		}
		if p.Addr().Is4In6() {
			// Unmap so that 10.0.0.0/8 written as ::ffff:10.0.0.0/104 means the same.
			if p.Bits() < 96 {
				return netip.Prefix{}, fmt.Errorf("bad CIDR %q: IPv4-mapped prefix shorter than /96", s)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := parseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("bad address %q: want an IP or a CIDR such as 10.1.2.3 or 10.1.2.0/24", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (v *validator) tenant(name string, t *Tenant) {
	key := "tenants." + name
	if !nameRE.MatchString(name) {
		v.fail(key, "bad tenant name %q: want lower-case letters, digits and '-', starting with a letter or digit, at most 63", name)
	}
	if t == nil {
		v.fail(key, "empty tenant: set token_file or token_env")
		return
	}
	switch {
	case t.TokenFile == "" && t.TokenEnv == "":
		v.fail(key, "set token_file or token_env")
	case t.TokenFile != "" && t.TokenEnv != "":
		v.fail(key+".token_env", "set token_file or token_env, not both")
	case t.TokenEnv != "" && !envRE.MatchString(t.TokenEnv):
		v.fail(key+".token_env", "bad environment variable name %q", t.TokenEnv)
	}
	v.credentials(name, t.Credentials)
	for _, cn := range slices.Sorted(maps.Keys(t.Classes)) {
		ckey := key + ".classes." + cn
		if !nameRE.MatchString(cn) {
			v.fail(ckey, "bad class name %q: want lower-case letters, digits and '-', starting with a letter or digit, at most 63", cn)
		}
		cl := t.Classes[cn]
		if cl == nil {
			continue
		}
		seen := map[string]bool{}
		for i, p := range cl.Derive.Presets {
			k := fmt.Sprintf("%s.derive.presets[%d]", ckey, i)
			switch {
			case presets[p] == nil:
				v.fail(k, "unknown preset %q (known: %s)", p, knownPresets())
			case seen[p]:
				v.fail(k, "preset %q listed twice", p)
			}
			seen[p] = true
		}
		for i, h := range cl.RunExtras {
			k := fmt.Sprintf("%s.run_extras[%d]", ckey, i)
			hp, err := parseHostPattern(h)
			if err != nil {
				v.fail(k, "%v", err)
			} else if why := deniedHost(hp); why != "" {
				v.fail(k, "%q is %s, inside the dialer's deny ranges", h, why)
			}
		}
		for i := range cl.Allow {
			v.entry(fmt.Sprintf("%s.allow[%d]", ckey, i), &cl.Allow[i], false)
		}
		for i := range cl.Passthrough {
			v.entry(fmt.Sprintf("%s.passthrough[%d]", ckey, i), &cl.Passthrough[i], true)
		}
	}
}

func (v *validator) entry(key string, e *Entry, passthrough bool) {
	switch {
	case e.Preset != "" && e.Host != "":
		v.fail(key, "set host or preset, not both")
	case e.Preset != "":
		if _, ok := presets[e.Preset]; !ok {
			v.fail(key+".preset", "unknown preset %q (known: %s)", e.Preset, knownPresets())
		}
		if len(e.Ports)+len(e.Methods)+len(e.Paths)+len(e.AllowAddresses) > 0 || e.WebSocket {
			v.fail(key, "a preset entry takes no other keys")
		}
		return
	case e.Host == "":
		v.fail(key, "set host (or preset)")
	default:
		hp, err := parseHostPattern(e.Host)
		if err != nil {
			v.fail(key+".host", "%v", err)
		} else if why := deniedHost(hp); why != "" && !allowsAll(hp, e.AllowAddresses) {
			v.fail(key+".host", "%q is %s, inside the dialer's deny ranges: list it in allow_addresses to opt in", e.Host, why)
		}
	}
	for i, p := range e.Ports {
		if p < 1 || p > 65535 {
			v.fail(fmt.Sprintf("%s.ports[%d]", key, i), "port %d out of range 1-65535", p)
		}
	}
	if passthrough && (len(e.Methods) > 0 || len(e.Paths) > 0 || e.WebSocket) {
		v.fail(key, "methods, paths and websocket do not apply to passthrough: the tunnel is not inspected (use allow)")
	}
	for i, m := range e.Methods {
		up := strings.ToUpper(strings.TrimSpace(m))
		if !knownMethods[up] {
			v.fail(fmt.Sprintf("%s.methods[%d]", key, i), "unknown method %q (known: %s)", m, strings.Join(slices.Sorted(maps.Keys(knownMethods)), ", "))
		}
	}
	for i, p := range e.Paths {
		if !strings.HasPrefix(p, "/") {
			v.fail(fmt.Sprintf("%s.paths[%d]", key, i), "path %q must start with /", p)
		} else if _, err := cleanPath(p); err != nil {
			v.fail(fmt.Sprintf("%s.paths[%d]", key, i), "path %q has dot segments, control characters or bad escapes", p)
		}
	}
	for i, a := range e.AllowAddresses {
		if _, err := parsePrefix(a); err != nil {
			v.fail(fmt.Sprintf("%s.allow_addresses[%d]", key, i), "%v", err)
		}
	}
}

func knownPresets() string {
	if len(presets) == 0 {
		return "none yet"
	}
	return strings.Join(slices.Sorted(maps.Keys(presets)), ", ")
}

// denyRanges mirror the guarded dialer's default deny list (gateway/guard DefaultDeny),
// which rules cannot import: an entry naming such an address literally would be refused
// at dial time anyway, so naming it without allow_addresses is a config error.
var denyRanges = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"224.0.0.0/4", "240.0.0.0/4", "::/128", "::1/128", "100::/64", "2001::/23",
		"fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8", "64:ff9b::/96", "64:ff9b:1::/48",
		"2002::/16",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// deniedHost says why a host pattern names something inside the deny ranges (an IP
// literal in them, or localhost, RFC 6761), "" when it does not.
func deniedHost(hp hostPattern) string {
	if hp.ip {
		a, _ := netip.ParseAddr(hp.exact)
		for _, p := range denyRanges {
			if p.Contains(a) {
				return "in " + p.String()
			}
		}
		return ""
	}
	name := hp.exact
	if name == "" {
		name = hp.suffix[1:]
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return "a loopback name"
	}
	return ""
}

// allowsAll reports whether allow_addresses covers the IP literal of hp.
func allowsAll(hp hostPattern, allow []string) bool {
	if !hp.ip {
		return false
	}
	a, _ := netip.ParseAddr(hp.exact)
	for _, s := range allow {
		if p, err := parsePrefix(s); err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}
