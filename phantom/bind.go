package phantom

import (
	"strings"

	"github.com/sluice-egress/sluice/rules/match"
)

// Binds reports whether the real secret may be sent to host:port path, path escaped as
// on the wire (url.URL.EscapedPath). Hosts match as the policy's entry hosts do (package
// match); a path the policy refuses (dot segments, bad escapes: match.CleanPath) is under
// no bound prefix.
func (u *Use) Binds(host string, port int, path string) bool {
	return u.BindsHost(host, port) && u.bindsPath(path)
}

// BindsHost reports whether host:port is one of the credential's, whatever the path.
func (u *Use) BindsHost(host string, port int) bool {
	h, err := match.NormalizeHost(host)
	if err != nil {
		return false
	}
	for _, p := range u.hosts {
		if p.Match(h) {
			return u.bindsPort(port)
		}
	}
	return false
}

func (u *Use) bindsPort(port int) bool {
	ps := u.Credential.Ports
	if len(ps) == 0 {
		return port == 443
	}
	for _, p := range ps {
		if p == port {
			return true
		}
	}
	return false
}

func (u *Use) bindsPath(p string) bool {
	if len(u.Credential.Paths) == 0 {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		// An absolute-form request may come without a path: that is the root.
		p = "/" + p
	}
	// Refuse, rather than resolve, what could escape a bound prefix on some server:
	// the policy's own reading of the path.
	clean, err := match.CleanPath(p)
	if err != nil {
		return false
	}
	for _, b := range u.Credential.Paths {
		prefix, err := match.CleanPath(b)
		if err == nil && strings.HasPrefix(clean, prefix) {
			return true
		}
	}
	return false
}

// hostPatterns parses Hosts; one that does not parse binds nothing.
func (c *Credential) hostPatterns() []match.HostPattern {
	var out []match.HostPattern
	for _, h := range c.Hosts {
		if p, err := match.ParseHostPattern(h); err == nil {
			out = append(out, p)
		}
	}
	return out
}
