package config

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// TestReviewKeys: on_deny, hold_timeout and mode decode strictly onto the
// class and tenant, and a bad value names its file, line and key.
func TestReviewKeys(t *testing.T) {
	const head = "tenants:\n  acme:\n    token_file: a.token\n"
	tests := []struct {
		name, yaml, wantErr string
		check               func(t *testing.T, c *Config)
	}{
		{name: "hold with a timeout", yaml: head + "    mode: shadow\n    classes:\n      agent:\n        on_deny: hold\n        hold_timeout: 45s\n        mode: enforce\n",
			check: func(t *testing.T, c *Config) {
				cl := c.Tenants["acme"].Classes["agent"]
				if cl.OnDeny != rules.OnDenyHold || cl.HoldTimeout != 45*time.Second || cl.Mode != rules.ModeEnforce {
					t.Fatalf("class = %+v", cl)
				}
				if c.Policy().Tenants["acme"].Mode != rules.ModeShadow {
					t.Fatal("tenant mode not handed to the policy")
				}
				// The tenant's shadow reaches every class, as the engine has it.
				if sc := c.ShadowClasses(); len(sc) != 1 || !sc["acme/agent"] {
					t.Fatalf("shadow classes %v", sc)
				}
			}},
		{name: "review section", yaml: "review:\n  refuse_in_tls: true\n  request_burst: 3\n  request_every: 10s\n",
			check: func(t *testing.T, c *Config) {
				if !c.Review.RefuseInTLS || c.Review.Burst() != 3 || c.Review.Every() != 10*time.Second {
					t.Fatalf("review = %+v", c.Review)
				}
			}},
		{name: "review defaults", yaml: "version: 1\n",
			check: func(t *testing.T, c *Config) {
				if c.Review.RefuseInTLS || c.Review.Burst() != DefaultRequestBurst || c.Review.Every() != time.Minute {
					t.Fatalf("review = %+v", c.Review)
				}
			}},
		{name: "bad on_deny", yaml: head + "    classes:\n      agent:\n        on_deny: wait\n",
			wantErr: `sluice.yaml:6: tenants.acme.classes.agent.on_deny: got "wait"`},
		{name: "hold too long", yaml: head + "    classes:\n      agent:\n        on_deny: hold\n        hold_timeout: 10m\n",
			wantErr: `sluice.yaml:7: tenants.acme.classes.agent.hold_timeout: 10m0s is out of range: at most 2m0s`},
		{name: "timeout without hold", yaml: head + "    classes:\n      agent:\n        hold_timeout: 10s\n",
			wantErr: `sluice.yaml:6: tenants.acme.classes.agent.hold_timeout: applies only with on_deny: hold`},
		{name: "bad class mode", yaml: head + "    classes:\n      agent:\n        mode: audit\n",
			wantErr: `sluice.yaml:6: tenants.acme.classes.agent.mode: got "audit"`},
		{name: "bad tenant mode", yaml: head + "    mode: loose\n",
			wantErr: `sluice.yaml:4: tenants.acme.mode: got "loose"`},
		{name: "burst out of range", yaml: "review:\n  request_burst: 1000\n",
			wantErr: `sluice.yaml:2: review.request_burst: 1000 is out of range`},
		{name: "unknown review key", yaml: "review:\n  refuse: true\n",
			wantErr: `sluice.yaml:2: review.refuse: unknown key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), "sluice.yaml")
			if err == nil {
				err = c.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}
