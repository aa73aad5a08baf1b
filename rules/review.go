package rules

import (
	"time"
)

// Modes of a tenant or class (Tenant.Mode, Class.Mode).
const (
	// ModeEnforce refuses what the policy does not allow: the default.
	ModeEnforce = "enforce"
	// ModeShadow lets what the policy would refuse through, recorded as a
	// would-refuse incident: for onboarding a tenant or class.
	ModeShadow = "shadow"
)

// What a class does with a refusal (Class.OnDeny).
const (
	// OnDenyRefuse answers 403 at once: the default.
	OnDenyRefuse = "refuse"
	// OnDenyHold holds the refused CONNECT or request open for up to
	// Class.HoldTimeout while a reviewer decides the access request it files.
	OnDenyHold = "hold"
)

// Bounds of Class.HoldTimeout.
const (
	// DefaultHoldTimeout is the hold of a class with on_deny: hold and no
	// hold_timeout.
	DefaultHoldTimeout = 30 * time.Second
	// MaxHoldTimeout bounds a hold: a held connection ties up a client and
	// the gateway's limits.
	MaxHoldTimeout = 120 * time.Second
)

// Review is what a Decision carries of its class's review settings: how a
// refusal is carried out.
type Review struct {
	// Shadow: the tenant or the class runs in ModeShadow, so a policy
	// refusal is recorded as would-refuse and the request goes on.
	Shadow bool
	// Hold is how long a refused CONNECT or request is held open for a
	// reviewer's decision; zero: refused at once.
	Hold time.Duration
}

// reviewOf compiles a class's review settings (checked by Check).
func reviewOf(t *Tenant, cl *Class) Review {
	var r Review
	if t != nil && t.Mode == ModeShadow {
		r.Shadow = true
	}
	if cl == nil {
		return r
	}
	if cl.Mode == ModeShadow {
		r.Shadow = true
	}
	if cl.OnDeny == OnDenyHold {
		r.Hold = cl.HoldTimeout
		if r.Hold <= 0 {
			r.Hold = DefaultHoldTimeout
		}
	}
	return r
}

// review checks a class's on_deny, hold_timeout and mode.
func (ps *problems) review(ckey string, cl *Class) {
	ps.mode(ckey+".mode", cl.Mode)
	switch cl.OnDeny {
	case "", OnDenyRefuse, OnDenyHold:
	default:
		ps.fail(ckey+".on_deny", "got %q, want %q or %q", cl.OnDeny, OnDenyRefuse, OnDenyHold)
	}
	switch {
	case cl.HoldTimeout < 0 || cl.HoldTimeout > MaxHoldTimeout:
		ps.fail(ckey+".hold_timeout", "%s is out of range: at most %s", cl.HoldTimeout, MaxHoldTimeout)
	case cl.HoldTimeout > 0 && cl.OnDeny != OnDenyHold:
		ps.fail(ckey+".hold_timeout", "applies only with on_deny: hold")
	}
}

func (ps *problems) mode(key, m string) {
	switch m {
	case "", ModeEnforce, ModeShadow:
	default:
		ps.fail(key, "got %q, want %q or %q", m, ModeEnforce, ModeShadow)
	}
}

// Review returns the review settings of a tenant's class; zero for an
// unknown one.
func (e *Engine) Review(tenant, className string) Review {
	t := e.tenants[tenant]
	if t == nil || t.classes[className] == nil {
		return Review{}
	}
	return t.classes[className].review
}
