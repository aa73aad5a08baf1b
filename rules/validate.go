package rules

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/sluice-egress/sluice/rules/match"
)

// nameRE is the shape of tenant, class and credential names: they appear in user names,
// paths and metrics labels.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidName reports whether s may name a tenant, a launch class or a credential:
// lower-case letters, digits and '-', starting with a letter or digit, at most 63.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// knownMethods are the methods an entry may name (RFC 9110 and PATCH; CONNECT is not a
// request an allow entry could let through, it is what opens the tunnel).
var knownMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
	"DELETE": true, "OPTIONS": true, "TRACE": true,
}

// Problem is one thing wrong in a policy.
type Problem struct {
	// Key is the value's key path as in the config file
	// ("tenants.acme.classes.agent.allow[2].host").
	Key string
	// Msg says what is wrong and, where it can, what to write instead.
	Msg string
}

// Error returns "key: msg".
func (p *Problem) Error() string {
	if p.Key == "" {
		return p.Msg
	}
	return p.Key + ": " + p.Msg
}

// problems collects Problems.
type problems []*Problem

func (ps *problems) fail(key, format string, args ...any) {
	*ps = append(*ps, &Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// err joins the problems into one error; nil when there are none.
func (ps problems) err() error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// Check validates the policy and returns every problem, keyed as in the config file, in
// a stable order: upstream hosts, preset host slots, then tenants by name. Compile
// refuses a policy with problems.
func (p *Policy) Check() []*Problem {
	var ps problems
	ps.upstreamHosts(p.UpstreamHosts)
	ps.presetHosts(p.PresetHosts)
	for _, tn := range slices.Sorted(maps.Keys(p.Tenants)) {
		ps.tenant(tn, p.Tenants[tn])
	}
	return ps
}

// presetHosts checks presets.hosts: known slots, valid host patterns outside the deny
// ranges (an internal mirror needs an explicit entry with allow_addresses instead).
func (ps *problems) presetHosts(hosts map[string][]string) {
	slots := PresetSlots()
	for _, slot := range slices.Sorted(maps.Keys(hosts)) {
		key := "presets.hosts." + slot
		if !slices.Contains(slots, slot) {
			ps.fail(key, "unknown host slot %q (known: %s)", slot, strings.Join(slots, ", "))
			continue
		}
		for i, h := range hosts[slot] {
			k := fmt.Sprintf("%s[%d]", key, i)
			hp, err := match.ParseHostPattern(h)
			if err != nil {
				ps.fail(k, "%v", err)
				continue
			}
			if why := deniedHost(hp); why != "" {
				ps.fail(k, "%q is %s, inside the dialer's deny ranges; allow an internal mirror with its own entry and allow_addresses", h, why)
			}
		}
	}
}

// upstreamHosts checks upstream.hosts: host names, each once, to IP literals.
func (ps *problems) upstreamHosts(hosts map[string]string) {
	seen := map[string]string{}
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		key := "upstream.hosts." + h
		n, err := NormalizeHost(h)
		if err != nil {
			ps.fail(key, "%v", err)
		} else if _, err := netip.ParseAddr(n); err == nil {
			ps.fail(key, "%q is an IP address already; list host names", h)
		} else if other, dup := seen[n]; dup {
			ps.fail(key, "%q is the same host as %q", h, other)
		} else {
			seen[n] = h
		}
		if _, err := parseAddr(hosts[h]); err != nil {
			ps.fail(key, "%v", err)
		}
	}
}

func (ps *problems) tenant(name string, t *Tenant) {
	key := "tenants." + name
	if !nameRE.MatchString(name) {
		ps.fail(key, "bad tenant name %q: want lower-case letters, digits and '-', starting with a letter or digit, at most 63", name)
	}
	if t == nil {
		return
	}
	ps.mode(key+".mode", t.Mode)
	for i, cn := range t.TokenClasses {
		if _, ok := t.Classes[cn]; !ok {
			ps.fail(fmt.Sprintf("%s.token_classes[%d]", key, i), "class %q is not one of the tenant's classes (%s)", cn, strings.Join(slices.Sorted(maps.Keys(t.Classes)), ", "))
		}
	}
	for _, cn := range slices.Sorted(maps.Keys(t.Classes)) {
		ckey := key + ".classes." + cn
		if !nameRE.MatchString(cn) {
			ps.fail(ckey, "bad class name %q: want lower-case letters, digits and '-', starting with a letter or digit, at most 63", cn)
		}
		cl := t.Classes[cn]
		if cl == nil {
			continue
		}
		ps.review(ckey, cl)
		seen := map[string]bool{}
		for i, p := range cl.Derive.Presets {
			k := fmt.Sprintf("%s.derive.presets[%d]", ckey, i)
			switch {
			case presets[p] == nil:
				ps.fail(k, "unknown preset %q (known: %s)", p, knownPresets())
			case seen[p]:
				ps.fail(k, "preset %q listed twice", p)
			}
			seen[p] = true
		}
		for i, h := range cl.RunExtras {
			k := fmt.Sprintf("%s.run_extras[%d]", ckey, i)
			hp, err := match.ParseHostPattern(h)
			if err != nil {
				ps.fail(k, "%v", err)
			} else if why := deniedHost(hp); why != "" {
				ps.fail(k, "%q is %s, inside the dialer's deny ranges", h, why)
			}
		}
		for i := range cl.Allow {
			ps.entry(fmt.Sprintf("%s.allow[%d]", ckey, i), &cl.Allow[i], false)
		}
		for i := range cl.Passthrough {
			ps.entry(fmt.Sprintf("%s.passthrough[%d]", ckey, i), &cl.Passthrough[i], true)
		}
	}
}

func (ps *problems) entry(key string, e *Entry, passthrough bool) {
	switch {
	case e.Preset != "" && e.Host != "":
		ps.fail(key, "set host or preset, not both")
	case e.Preset != "":
		if _, ok := presets[e.Preset]; !ok {
			ps.fail(key+".preset", "unknown preset %q (known: %s)", e.Preset, knownPresets())
		}
		if len(e.Ports)+len(e.Methods)+len(e.Paths)+len(e.AllowAddresses) > 0 || e.WebSocket {
			ps.fail(key, "a preset entry takes no other keys")
		}
		return
	case e.Host == "":
		ps.fail(key, "set host (or preset)")
	default:
		hp, err := match.ParseHostPattern(e.Host)
		if err != nil {
			ps.fail(key+".host", "%v", err)
		} else if why := deniedHost(hp); why != "" && !allowsAll(hp, e.AllowAddresses) {
			ps.fail(key+".host", "%q is %s, inside the dialer's deny ranges: list it in allow_addresses to opt in", e.Host, why)
		}
	}
	for i, p := range e.Ports {
		if p < 1 || p > 65535 {
			ps.fail(fmt.Sprintf("%s.ports[%d]", key, i), "port %d out of range 1-65535", p)
		}
	}
	if passthrough && (len(e.Methods) > 0 || len(e.Paths) > 0 || e.WebSocket) {
		ps.fail(key, "methods, paths and websocket do not apply to passthrough: the tunnel is not inspected (use allow)")
	}
	for i, m := range e.Methods {
		up := strings.ToUpper(strings.TrimSpace(m))
		if !knownMethods[up] {
			ps.fail(fmt.Sprintf("%s.methods[%d]", key, i), "unknown method %q (known: %s)", m, strings.Join(slices.Sorted(maps.Keys(knownMethods)), ", "))
		}
	}
	for i, p := range e.Paths {
		if !strings.HasPrefix(p, "/") {
			ps.fail(fmt.Sprintf("%s.paths[%d]", key, i), "path %q must start with /", p)
		} else if _, err := match.CleanPath(p); err != nil {
			ps.fail(fmt.Sprintf("%s.paths[%d]", key, i), "path %q has dot segments, control characters or bad escapes", p)
		}
	}
	for i, a := range e.AllowAddresses {
		if _, err := parsePrefix(a); err != nil {
			ps.fail(fmt.Sprintf("%s.allow_addresses[%d]", key, i), "%v", err)
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
func deniedHost(hp match.HostPattern) string {
	if hp.IsIP() {
		a, _ := netip.ParseAddr(hp.Exact())
		for _, p := range denyRanges {
			if p.Contains(a) {
				return "in " + p.String()
			}
		}
		return ""
	}
	name := hp.Exact()
	if name == "" {
		name = hp.Suffix()[1:]
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return "a loopback name"
	}
	return ""
}

// allowsAll reports whether allow_addresses covers the IP literal of hp.
func allowsAll(hp match.HostPattern, allow []string) bool {
	if !hp.IsIP() {
		return false
	}
	a, _ := netip.ParseAddr(hp.Exact())
	for _, s := range allow {
		if p, err := parsePrefix(s); err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}

// NormalizePattern checks h as an entry's host pattern and returns it normalised, as
// the engine matches it: an exact host or IP literal, or "*.suffix". A wildcard must sit
// below a registrable domain.
func NormalizePattern(h string) (string, error) {
	hp, err := match.ParseHostPattern(h)
	if err != nil {
		return "", err
	}
	return hp.String(), nil
}

// DeniedHost says why host pattern h names something inside the dialer's deny ranges
// (an IP literal in them, or a loopback name); "" when it does not, or is no pattern.
func DeniedHost(h string) string {
	hp, err := match.ParseHostPattern(h)
	if err != nil {
		return ""
	}
	return deniedHost(hp)
}

// CheckPath reports whether p is a path prefix entries accept: starting with '/', with
// no dot segments, control characters or bad escapes.
func CheckPath(p string) error {
	_, err := match.CleanPath(p)
	return err
}
