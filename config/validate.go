package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// envRE is the shape of an environment variable name.
var envRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks every value and returns all problems at once (errors.Join of
// *FieldError), each naming file, line and key, as in
// `sluice.yaml:12: tenants.acme.classes.agent.allow[2].host: bad host pattern "*.com": ...`.
func (c *Config) Validate() error {
	v := validator{c: c}
	// The policy model's problems first: on a line with several, the tenant's name
	// comes before its token.
	for _, p := range c.Policy().Check() {
		v.fail(p.Key, "%s", p.Msg)
	}
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
	for i, r := range c.Upstream.Deny {
		if _, err := parseRange(r); err != nil {
			v.fail(fmt.Sprintf("upstream.deny[%d]", i), "%v", err)
		}
	}
	if c.Scanning.MaxInflightBytes <= 0 {
		v.fail("scanning.max_inflight_bytes", "must be positive, such as 256MiB")
	}
	if c.Scanning.MaxBodyBytes <= 0 {
		v.fail("scanning.max_body_bytes", "must be positive, such as 10MiB")
	}
	switch c.Scanning.OnOversize {
	case OnOversizeBlock, OnOversizeForward, OnOversizeForwardTail:
	default:
		v.fail("scanning.on_oversize", "got %q, want %q or %q", c.Scanning.OnOversize, OnOversizeBlock, OnOversizeForwardTail)
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
	v.limits()
	v.stepCAConfig()
	v.dashboard()
	v.alerts()
	v.dns()
	v.review()
	v.tls()
	for _, tn := range slices.Sorted(maps.Keys(c.Tenants)) {
		v.tenant(tn, c.Tenants[tn])
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

// tenant checks what the config adds to a tenant's policy: its token and credentials.
func (v *validator) tenant(name string, t *Tenant) {
	key := "tenants." + name
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
}
