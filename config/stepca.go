package config

import (
	"net/url"
	"sort"
	"time"
)

// DefaultIntermediateTTL is the lifetime of a replica's intermediate when
// step_ca.intermediate_ttl is absent.
const DefaultIntermediateTTL = Duration(8 * time.Hour)

// StepCA names the step-ca that holds one tenant's root (or an online
// intermediate under an offline root) and the JWK provisioner through which
// replicas ask it for their intermediates. See docs/scaling.md, key custody.
type StepCA struct {
	// URL is step-ca's base URL (https).
	URL string `yaml:"url"`
	// RootFile holds the tenant root (PEM): it verifies step-ca's TLS and
	// every intermediate, and it is what sandboxes trust.
	RootFile string `yaml:"root_file"`
	// Provisioner is the JWK provisioner's name.
	Provisioner string `yaml:"provisioner"`
	// ProvisionerKeyFile holds the provisioner's private key (PEM, P-256).
	ProvisionerKeyFile string `yaml:"provisioner_key_file"`
	// KeyID is the provisioner key's id. Empty: its JWK thumbprint (step's default).
	KeyID string `yaml:"key_id"`
	// IntermediateTTL is the lifetime asked for. Zero: DefaultIntermediateTTL.
	IntermediateTTL Duration `yaml:"intermediate_ttl"`
}

// TTL is the intermediate lifetime in force.
func (s *StepCA) TTL() time.Duration {
	if s.IntermediateTTL <= 0 {
		return time.Duration(DefaultIntermediateTTL)
	}
	return time.Duration(s.IntermediateTTL)
}

func (v *validator) stepCAConfig() {
	names := make([]string, 0, len(v.c.Tenants))
	for n := range v.c.Tenants {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := v.c.Tenants[n]
		if t == nil || t.StepCA == nil {
			continue
		}
		s, key := t.StepCA, "tenants."+n+".step_ca"
		if u, err := url.Parse(s.URL); err != nil || u.Scheme != "https" || u.Host == "" {
			v.fail(key+".url", "want step-ca's https:// URL, got %q", s.URL)
		}
		for field, val := range map[string]string{"root_file": s.RootFile, "provisioner": s.Provisioner,
			"provisioner_key_file": s.ProvisionerKeyFile} {
			if val == "" {
				v.fail(key+"."+field, "required with step_ca")
			}
		}
		if s.IntermediateTTL < 0 {
			v.fail(key+".intermediate_ttl", "must not be negative")
		}
	}
}
