package explain

import (
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/rules"
)

func TestPolicy(t *testing.T) {
	var b strings.Builder
	Policy(&b, &rules.EffectivePolicy{Tenant: "acme", Class: "agent", TenantToken: true, Allow: []rules.Entry{{Host: "api.example.test"}}}, nil)
	out := b.String()
	for _, want := range []string{"tenant acme, class agent", "the tenant token (as acme/agent)", "api.example.test", "passthrough (blind tunnel, host and port only):\n  (none)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	Policy(&b, &rules.EffectivePolicy{Tenant: "acme", Class: "premerge"}, nil)
	if out := b.String(); !strings.Contains(out, "run tokens only") || strings.Contains(out, "the tenant token (") {
		t.Errorf("a class the tenant token cannot select:\n%s", out)
	}
}

func TestPresets(t *testing.T) {
	var b strings.Builder
	Presets(&b, rules.Presets())
	if out := b.String(); !strings.Contains(out, "npm@") || !strings.Contains(out, "host slots") {
		t.Errorf("presets output:\n%s", out)
	}
}

func TestTrace(t *testing.T) {
	var b strings.Builder
	Trace(&b, nil)
	if b.Len() != 0 {
		t.Fatalf("empty trace printed %q", b.String())
	}
	Trace(&b, []rules.TraceLine{{Stage: "connect", List: "allow", Host: "api.example.test", Origin: "policy", Matched: true},
		{Stage: "request", List: "allow", Host: "api.example.test", Origin: "policy", Why: "method-not-allowed"}, {Stage: "default", Why: "deny"}})
	for _, want := range []string{"trace:\n", "api.example.test  (policy): matched", "(policy): method-not-allowed", "  default deny\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("trace lacks %q:\n%s", want, b.String())
		}
	}
}
