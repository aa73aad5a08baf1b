// Package match normalises hosts and URL paths and matches them against allowlist
// patterns: the one matcher of the policy, the scanner's bindings and phantom bindings.
package match

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// Limits from RFC 1035 section 2.3.4 (in the ASCII form).
const (
	maxHostLen  = 253
	maxLabelLen = 63
)

// ErrBadHost is wrapped by every error of NormalizeHost and of host pattern parsing.
var ErrBadHost = errors.New("bad host")

// NormalizeHost returns the one spelling of h that policy matching compares: a lower-case
// ASCII (punycode) DNS name without a trailing dot, or a canonical IP literal (no brackets,
// IPv4-mapped IPv6 unmapped to IPv4). It refuses what a DNS name cannot be: empty labels,
// labels over 63 octets, names over 253 octets, characters outside letters, digits and
// hyphens, IPv6 zones, and names whose last label looks numeric but is no canonical IPv4
// address ("1.2.3", "0x7f.1", "010.0.0.1"), which resolvers read in differing ways.
func NormalizeHost(h string) (string, error) {
	// Every request asks for the host it names, almost always a name already in normal
	// form: answered without the two IDNA passes, which cost most of a request's policy
	// decision.
	if name := strings.TrimSuffix(h, "."); isNormalName(name) {
		return name, nil
	}
	return normalizeHost(h)
}

// isNormalName reports whether s is a name that normalizeHost returns unchanged: labels
// of 1 to 63 lower-case letters, digits and hyphens, no hyphen first or last, none in
// the third and fourth place (IDNA reads "xn--" and refuses any other such label), 253
// octets at most, and a last label that is not numeric (so no IP literal either). Any
// other spelling takes the long way.
func isNormalName(s string) bool {
	if s == "" || len(s) > maxHostLen {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		l := s[start:i]
		if l == "" || len(l) > maxLabelLen || l[0] == '-' || l[len(l)-1] == '-' ||
			len(l) >= 4 && l[2] == '-' && l[3] == '-' {
			return false
		}
		start = i + 1
	}
	return !numericLabel(s[strings.LastIndexByte(s, '.')+1:])
}

// normalizeHost is NormalizeHost without its fast path.
func normalizeHost(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("%w: empty", ErrBadHost)
	}
	if strings.HasPrefix(h, "[") {
		inner, ok := strings.CutSuffix(h[1:], "]")
		if !ok {
			return "", fmt.Errorf("%w %q: unbalanced bracket", ErrBadHost, h)
		}
		a, err := netip.ParseAddr(inner)
		if err != nil || !a.Is6() {
			return "", fmt.Errorf("%w %q: brackets hold no IPv6 address", ErrBadHost, h)
		}
		return canonicalAddr(h, a)
	}
	// One trailing dot marks a fully qualified name; it names the same host.
	name := strings.TrimSuffix(h, ".")
	if name == "" {
		return "", fmt.Errorf("%w %q: empty", ErrBadHost, h)
	}
	if a, err := netip.ParseAddr(name); err == nil {
		return canonicalAddr(h, a)
	}
	if len(name) > 4*maxHostLen {
		// Bound the work before IDNA mapping; no valid name comes close.
		return "", fmt.Errorf("%w: longer than %d octets", ErrBadHost, maxHostLen)
	}
	if !utf8.ValidString(name) {
		return "", fmt.Errorf("%w %q: not UTF-8", ErrBadHost, h)
	}
	ascii, err := idna.Lookup.ToASCII(name)
	if err != nil {
		return "", fmt.Errorf("%w %q: %v", ErrBadHost, h, err)
	}
	ascii = strings.ToLower(ascii)
	if err := checkLDH(ascii); err != nil {
		return "", fmt.Errorf("%w %q: %v", ErrBadHost, h, err)
	}
	// The result must be its own normal form, or two spellings could name one host
	// differently on a second pass.
	if again, err := idna.Lookup.ToASCII(ascii); err != nil || again != ascii {
		return "", fmt.Errorf("%w %q: no stable ASCII form", ErrBadHost, h)
	}
	return ascii, nil
}

func canonicalAddr(h string, a netip.Addr) (string, error) {
	if a.Zone() != "" {
		return "", fmt.Errorf("%w %q: IPv6 zones are not allowed", ErrBadHost, h)
	}
	return a.Unmap().String(), nil
}

// checkLDH checks the ASCII form of a name: letters, digits and hyphens in labels of 1 to 63
// octets, 253 octets at most, and a last label that does not look like a number.
func checkLDH(s string) error {
	if len(s) > maxHostLen {
		return fmt.Errorf("longer than %d octets", maxHostLen)
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" {
			return errors.New("empty label")
		}
		if len(l) > maxLabelLen {
			return fmt.Errorf("label longer than %d octets", maxLabelLen)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return fmt.Errorf("invalid character %q", c)
			}
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return errors.New("label starts or ends with a hyphen")
		}
	}
	if numericLabel(labels[len(labels)-1]) {
		// WHATWG URL parsers treat such names as IPv4 in decimal, octal or hex parts.
		return errors.New("numeric last label but not an IPv4 address")
	}
	return nil
}

// numericLabel reports whether l is all digits or a 0x hex number.
func numericLabel(l string) bool {
	if rest, ok := strings.CutPrefix(l, "0x"); ok {
		for i := 0; i < len(rest); i++ {
			c := rest[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// HostPattern is a parsed host pattern: an exact name, an IP literal, or a wildcard. The
// zero value matches nothing.
type HostPattern struct {
	// exact is the normalised host for exact names and IP literals; "" for a wildcard.
	exact string
	// ip is set when exact is an IP literal: it matches only that same literal.
	ip bool
	// suffix is ".example.test" for "*.example.test": it matches one or more labels below
	// example.test, never example.test itself.
	suffix string
}

// ParseHostPattern parses an entry host: "api.example.test", "*.example.test" or an IP
// literal. A wildcard must sit below a registrable domain: "*", "*.com" and "*.co.uk" are
// refused (wildcards under a private-section public suffix such as
// "*.githubusercontent.com" are allowed: each label below belongs to the same operator).
func ParseHostPattern(p string) (HostPattern, error) {
	switch {
	case p == "":
		return HostPattern{}, fmt.Errorf("%w: empty", ErrBadHost)
	case strings.Contains(p, "://"):
		return HostPattern{}, fmt.Errorf("%w pattern %q: no scheme, the host alone", ErrBadHost, p)
	case strings.ContainsAny(p, "/?#"):
		return HostPattern{}, fmt.Errorf("%w pattern %q: no path, the host alone (use paths:)", ErrBadHost, p)
	case strings.Contains(p, "@"):
		return HostPattern{}, fmt.Errorf("%w pattern %q: no user info, the host alone", ErrBadHost, p)
	}
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		if strings.Contains(rest, "*") {
			return HostPattern{}, fmt.Errorf("%w pattern %q: '*' only as the whole first label", ErrBadHost, p)
		}
		if strings.Contains(rest, ":") {
			return HostPattern{}, fmt.Errorf("%w pattern %q: no port here; list it under ports", ErrBadHost, p)
		}
		s, err := NormalizeHost(rest)
		if err != nil {
			return HostPattern{}, fmt.Errorf("%w pattern %q: %v", ErrBadHost, p, errors.Unwrap(err))
		}
		if _, err := netip.ParseAddr(s); err == nil {
			return HostPattern{}, fmt.Errorf("%w pattern %q: a wildcard cannot sit on an IP address", ErrBadHost, p)
		}
		if !strings.Contains(s, ".") {
			return HostPattern{}, fmt.Errorf("%w pattern %q: wider than a registrable domain (suffix needs at least two labels)", ErrBadHost, p)
		}
		if ps, icann := publicsuffix.PublicSuffix(s); icann && ps == s {
			return HostPattern{}, fmt.Errorf("%w pattern %q: wider than a registrable domain (%q is a public suffix)", ErrBadHost, p, s)
		}
		return HostPattern{suffix: "." + s}, nil
	}
	if strings.Contains(p, "*") {
		return HostPattern{}, fmt.Errorf("%w pattern %q: '*' only as the whole first label, as in \"*.example.test\"", ErrBadHost, p)
	}
	if strings.Contains(p, ":") && !strings.HasPrefix(p, "[") {
		if _, err := netip.ParseAddr(p); err != nil {
			return HostPattern{}, fmt.Errorf("%w pattern %q: no port here; list it under ports", ErrBadHost, p)
		}
	}
	if strings.HasPrefix(p, "[") && !strings.HasSuffix(p, "]") {
		return HostPattern{}, fmt.Errorf("%w pattern %q: no port here; list it under ports", ErrBadHost, p)
	}
	s, err := NormalizeHost(p)
	if err != nil {
		return HostPattern{}, err
	}
	_, ipErr := netip.ParseAddr(s)
	return HostPattern{exact: s, ip: ipErr == nil}, nil
}

// Match reports whether h, a host in NormalizeHost's form, matches the pattern. An IP
// literal matches only the same literal, never a wildcard.
func (p HostPattern) Match(h string) bool {
	if p.exact != "" {
		// Both sides are normal forms, so equal strings are the same name or address.
		return p.exact == h
	}
	if p.suffix == "" || len(h) <= len(p.suffix) || !strings.HasSuffix(h, p.suffix) {
		return false
	}
	_, err := netip.ParseAddr(h)
	return err != nil
}

// Covers reports whether every host that q matches, p matches too: an exact host or
// IP literal by an equal one or a wildcard that matches it, a wildcard by an equal or
// wider wildcard.
func (p HostPattern) Covers(q HostPattern) bool {
	if q.exact != "" {
		return p.Match(q.exact)
	}
	return q.suffix != "" && p.suffix != "" && strings.HasSuffix(q.suffix, p.suffix)
}

// Exact returns the normalised host of an exact pattern or IP literal; "" for a wildcard.
func (p HostPattern) Exact() string { return p.exact }

// IsIP reports whether the pattern is an IP literal.
func (p HostPattern) IsIP() bool { return p.ip }

// Suffix returns ".example.test" for the wildcard "*.example.test"; "" for an exact
// pattern.
func (p HostPattern) Suffix() string { return p.suffix }

// String returns the pattern as written in normalised form.
func (p HostPattern) String() string {
	if p.exact != "" {
		return p.exact
	}
	return "*" + p.suffix
}

// Host reports whether host matches pattern (as ParseHostPattern reads it), both
// normalised first. A pattern or host that does not parse matches nothing.
func Host(pattern, host string) bool {
	p, err := ParseHostPattern(pattern)
	if err != nil {
		return false
	}
	h, err := NormalizeHost(host)
	return err == nil && p.Match(h)
}
