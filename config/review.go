package config

import (
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// Defaults of the review section.
const (
	// DefaultRequestBurst is how many access requests a run may file at once
	// through the gateway before it must wait.
	DefaultRequestBurst = 5
	// DefaultRequestEvery is how often a run earns one more.
	DefaultRequestEvery = Duration(time.Minute)
	// MaxRequestBurst bounds review.request_burst.
	MaxRequestBurst = 100
)

// Review configures what a sandbox learns from a refusal and how it asks for
// access through the gateway (the review loop).
type Review struct {
	// RefuseInTLS answers a refused CONNECT inside TLS: the gateway completes
	// the handshake with a leaf from the tenant CA and answers the first
	// request with the refusal, so that clients that show only "CONNECT
	// tunnel failed, response 403" show the reason. Never for a passthrough
	// host, never dialling anything. false: a plain 403 to the CONNECT.
	RefuseInTLS bool `yaml:"refuse_in_tls"`
	// RequestBurst is how many access requests one run may file at once
	// through sluice.internal; zero: DefaultRequestBurst.
	RequestBurst int `yaml:"request_burst"`
	// RequestEvery is how often a run earns one more; zero:
	// DefaultRequestEvery.
	RequestEvery Duration `yaml:"request_every"`
}

// Burst returns RequestBurst or its default.
func (r Review) Burst() int {
	if r.RequestBurst > 0 {
		return r.RequestBurst
	}
	return DefaultRequestBurst
}

// Every returns RequestEvery or its default.
func (r Review) Every() time.Duration {
	if r.RequestEvery > 0 {
		return time.Duration(r.RequestEvery)
	}
	return time.Duration(DefaultRequestEvery)
}

func (v *validator) review() {
	r := v.c.Review
	if r.RequestBurst < 0 || r.RequestBurst > MaxRequestBurst {
		v.fail("review.request_burst", "%d is out of range 0-%d", r.RequestBurst, MaxRequestBurst)
	}
}

// ShadowClasses says of every tenant's class ("tenant/class") whether it runs
// in shadow mode, its own or its tenant's: what a reload that changes it
// must audit.
func (c *Config) ShadowClasses() map[string]bool {
	out := map[string]bool{}
	for tn, t := range c.Tenants {
		if t == nil {
			continue
		}
		for cn, cl := range t.Classes {
			out[tn+"/"+cn] = t.Mode == rules.ModeShadow || cl != nil && cl.Mode == rules.ModeShadow
		}
	}
	return out
}
