package config

import (
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/sluice-egress/sluice/rules"
)

// Where a credential is injected (Credential.Inject).
const (
	InjectBearer = "bearer" // Authorization: Bearer <secret> (the default)
	InjectBasic  = "basic"  // Authorization: Basic base64(user:<secret>), as git over HTTPS
	InjectHeader = "header" // a named header holds the secret
	InjectQuery  = "query"  // a named query parameter holds the secret
)

// Bounds of a credential's phantom.
const (
	MaxPhantomLength   = 512
	MinPhantomRandom   = 16 // random characters after the prefix, at least
	maxPhantomPrefix   = 64
	maxCredentialCount = 64
)

// Credential is a secret the sandbox never sees: the gateway gives the sandbox a phantom
// and swaps in the real secret only in requests to the hosts the credential is bound to.
// The real secret is referenced, never written in the config.
type Credential struct {
	// Name identifies the credential within its tenant: lower-case letters, digits, '-'.
	Name string `yaml:"name"`
	// SecretFile holds the real secret (relative to the config file's directory); it is
	// read again when it changes. Exactly one of SecretFile and SecretEnv.
	SecretFile string `yaml:"secret_file"`
	// SecretEnv names the environment variable of the gateway holding the real secret.
	SecretEnv string `yaml:"secret_env"`
	// Hosts the secret is bound to: exact hosts or "*.suffix" below a registrable domain.
	Hosts []string `yaml:"hosts"`
	// Ports the secret may be sent to; empty means 443.
	Ports []int `yaml:"ports"`
	// Paths are path prefixes the secret may be sent to; empty means any.
	Paths []string `yaml:"paths"`
	// Inject says where the secret goes: InjectBearer (default), InjectBasic,
	// InjectHeader or InjectQuery.
	Inject string `yaml:"inject"`
	// Header names the header for InjectHeader ("X-Api-Key").
	Header string `yaml:"header"`
	// Query names the query parameter for InjectQuery ("key").
	Query string `yaml:"query"`
	// User is the user name sent upstream with InjectBasic; empty keeps the client's.
	User string `yaml:"user"`
	// Env are the variable names the sandbox gets the phantom under (GITHUB_TOKEN, …);
	// empty means SLUICE_PHANTOM_<NAME>.
	Env []string `yaml:"env"`
	// Format shapes the phantom like a known kind of secret (a fake kind of the scanner:
	// "github-pat", "anthropic-api-key", …). Not with Prefix or Length.
	Format string `yaml:"format"`
	// Prefix starts the phantom ("ghp_", "sk-ant-"), for clients that check it.
	Prefix string `yaml:"prefix"`
	// Length is the phantom's total length; 0 means 40 (or the prefix and 32 more).
	Length int `yaml:"length"`
}

var (
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	formatRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	prefixRE     = regexp.MustCompile(`^[A-Za-z0-9_.-]*$`)
)

// reservedEnv are variables the export sets itself.
var reservedEnv = map[string]bool{
	"HTTPS_PROXY": true, "HTTP_PROXY": true, "NO_PROXY": true, "ALL_PROXY": true,
}

// HostPatterns returns the credential's hosts normalised ("*.suffix" or an exact host),
// as the gateway matches them. Call it on a validated config.
func (c *Credential) HostPatterns() []string {
	var out []string
	for _, h := range c.Hosts {
		if p, err := rules.NormalizePattern(h); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// SecretPath returns where the credential's secret file is, resolved against the config
// file's directory; "" when it is read from the environment.
func (c *Config) SecretPath(cr *Credential) string {
	if cr == nil || cr.SecretFile == "" {
		return ""
	}
	return c.ResolvePath(cr.SecretFile)
}

// credentials checks one tenant's credentials.
func (v *validator) credentials(tenant string, cs []Credential) {
	names := map[string]string{}
	envs := map[string]string{}
	if len(cs) > maxCredentialCount {
		v.fail("tenants."+tenant+".credentials", "%d credentials; at most %d", len(cs), maxCredentialCount)
	}
	for i := range cs {
		c := &cs[i]
		key := fmt.Sprintf("tenants.%s.credentials[%d]", tenant, i)
		switch {
		case !rules.ValidName(c.Name):
			v.fail(key+".name", "bad credential name %q: want lower-case letters, digits and '-'", c.Name)
		case names[c.Name] != "":
			v.fail(key+".name", "credential %q is already defined at %s", c.Name, names[c.Name])
		default:
			names[c.Name] = key
		}
		switch {
		case c.SecretFile == "" && c.SecretEnv == "":
			v.fail(key, "set secret_file or secret_env: the real secret is referenced, never written here")
		case c.SecretFile != "" && c.SecretEnv != "":
			v.fail(key+".secret_env", "set secret_file or secret_env, not both")
		case c.SecretEnv != "" && !envRE.MatchString(c.SecretEnv):
			v.fail(key+".secret_env", "bad environment variable name %q", c.SecretEnv)
		}
		v.credentialHosts(key, c)
		for j, p := range c.Ports {
			if p < 1 || p > 65535 {
				v.fail(fmt.Sprintf("%s.ports[%d]", key, j), "port %d out of range 1-65535", p)
			}
		}
		for j, p := range c.Paths {
			if err := rules.CheckPath(p); err != nil {
				v.fail(fmt.Sprintf("%s.paths[%d]", key, j), "path %q must start with / and have no dot segments, control characters or bad escapes", p)
			}
		}
		v.credentialInject(key, c)
		for j, e := range c.EnvNames() {
			k := fmt.Sprintf("%s.env[%d]", key, j)
			switch {
			case !envRE.MatchString(e):
				v.fail(k, "bad environment variable name %q", e)
			case reservedEnv[strings.ToUpper(e)] || strings.HasSuffix(strings.ToUpper(e), "_CA_BUNDLE") || strings.HasPrefix(e, "SSL_CERT"):
				v.fail(k, "%s is set by the export itself", e)
			case envs[e] != "":
				v.fail(k, "%s already carries the phantom of %s", e, envs[e])
			default:
				envs[e] = key
			}
		}
		v.credentialShape(key, c)
	}
}

// EnvNames are the variables the phantom is exported under.
func (c *Credential) EnvNames() []string {
	if len(c.Env) > 0 {
		return c.Env
	}
	return []string{"SLUICE_PHANTOM_" + strings.ToUpper(strings.ReplaceAll(c.Name, "-", "_"))}
}

func (v *validator) credentialHosts(key string, c *Credential) {
	if len(c.Hosts) == 0 {
		v.fail(key+".hosts", "bind the credential to at least one host")
	}
	for j, h := range c.Hosts {
		k := fmt.Sprintf("%s.hosts[%d]", key, j)
		p, err := rules.NormalizePattern(h)
		if err != nil {
			v.fail(k, "%v", err)
			continue
		}
		if why := rules.DeniedHost(p); why != "" {
			v.fail(k, "%q is %s, inside the dialer's deny ranges", h, why)
		}
		// A credential must not reach hosts run by others: a wildcard on any public
		// suffix, private ones included ("*.github.io"), is refused.
		if s, ok := strings.CutPrefix(p, "*."); ok {
			if ps, _ := publicsuffix.PublicSuffix(s); ps == s {
				v.fail(k, "%q: wider than a registrable domain (%q is a public suffix whose subdomains belong to different owners)", h, s)
			}
		}
	}
}

func (v *validator) credentialInject(key string, c *Credential) {
	badHeader := func(k, h string) {
		switch {
		case !headerNameRE.MatchString(h):
			v.fail(k, "bad header name %q", h)
		case strings.EqualFold(h, "Proxy-Authorization"):
			v.fail(k, "Proxy-Authorization never travels upstream")
		case strings.EqualFold(h, "Authorization"):
			v.fail(k, "use inject: bearer or basic for Authorization")
		}
	}
	switch c.Inject {
	case "", InjectBearer, InjectBasic:
	case InjectHeader:
		if c.Header == "" {
			v.fail(key+".header", "inject: header needs the header's name")
		} else {
			badHeader(key+".header", c.Header)
		}
	case InjectQuery:
		if c.Query == "" || strings.ContainsAny(c.Query, "&=#? \t\r\n") {
			v.fail(key+".query", "inject: query needs a parameter name without &, =, # or ?; got %q", c.Query)
		}
	default:
		v.fail(key+".inject", "got %q, want %s, %s, %s or %s", c.Inject, InjectBearer, InjectBasic, InjectHeader, InjectQuery)
	}
	if c.Header != "" && c.Inject != InjectHeader {
		v.fail(key+".header", "only with inject: header")
	}
	if c.Query != "" && c.Inject != InjectQuery {
		v.fail(key+".query", "only with inject: query")
	}
	if c.User != "" && c.Inject != InjectBasic {
		v.fail(key+".user", "only with inject: basic")
	}
	if strings.ContainsAny(c.User, ":\r\n") {
		v.fail(key+".user", "a user name holds no ':' or line breaks")
	}
}

func (v *validator) credentialShape(key string, c *Credential) {
	if c.Format != "" {
		if !formatRE.MatchString(c.Format) {
			v.fail(key+".format", "bad format %q: want a secret kind such as github-pat", c.Format)
		}
		if c.Prefix != "" || c.Length != 0 {
			v.fail(key+".format", "set format, or prefix and length, not both")
		}
		return
	}
	if len(c.Prefix) > maxPhantomPrefix || !prefixRE.MatchString(c.Prefix) {
		v.fail(key+".prefix", "bad prefix %q: letters, digits, '_', '.', '-', at most %d", c.Prefix, maxPhantomPrefix)
	}
	if c.Length != 0 && (c.Length < len(c.Prefix)+MinPhantomRandom || c.Length > MaxPhantomLength) {
		v.fail(key+".length", "got %d, want the prefix plus at least %d characters, at most %d", c.Length, MinPhantomRandom, MaxPhantomLength)
	}
}
