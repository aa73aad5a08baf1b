package config

import (
	"errors"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// ErrWhichTenant: LinkAllowed was given no tenant and the config has several
// (or none) to choose from.
var ErrWhichTenant = errors.New("config: several tenants: name one")

// LinkAllowed is what the gateway asks of a link in a request: may this
// tenant's class reach the host? With tenant "", the config's only tenant.
func (c *Config) LinkAllowed(tenant, class string) (func(host string) bool, error) {
	if tenant == "" {
		if len(c.Tenants) != 1 {
			return nil, ErrWhichTenant
		}
		for t := range c.Tenants {
			tenant = t
		}
	}
	p, err := rules.ResolvePolicy(rules.PolicyInput{Policy: c.Policy(), Tenant: tenant, Class: class, Now: time.Now()})
	if err != nil {
		return nil, err
	}
	return func(h string) bool {
		n, err := rules.NormalizeHost(h)
		return err == nil && p.Decide(rules.Query{Host: n, Port: 443, Stage: rules.StageConnect}).Action != rules.Deny
	}, nil
}
