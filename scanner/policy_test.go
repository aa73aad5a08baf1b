package scanner

import (
	"testing"

	hostmatch "github.com/sluice-egress/sluice/rules/match"
)

func TestDefaultBindingsParse(t *testing.T) {
	for _, b := range DefaultBindings() {
		for _, h := range b.Hosts {
			if _, err := hostmatch.ParseHostPattern(h); err != nil {
				t.Errorf("binding %s: %v", b.Rule, err)
			}
		}
	}
}

func TestBindingHosts(t *testing.T) {
	b := Binding{Rule: "r", Hosts: []string{"*.example.test", "api.other.test", "*.test"}}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"a.example.test", true},
		{"A.Example.TEST.", true},
		{"api.other.test", true},
		{"API.other.test", true},
		{"example.test", false},
		{"evilexample.test", false},
		{"x.api.other.test", false},
		// "*.test" is wider than a registrable domain: it binds nothing.
		{"anything.test", false},
		{"", false},
	} {
		if got := b.matches("r", "authorization", tc.host); got != tc.want {
			t.Errorf("matches(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	if b.matches("other-rule", "Authorization", "a.example.test") {
		t.Error("another rule's secret is bound")
	}
}

// TestActionUnmarshalText: a config names only block, redact and alert, spelled exactly.
func TestActionUnmarshalText(t *testing.T) {
	for in, want := range map[string]Action{"block": Block, "redact": Redact, "alert": Alert} {
		var a Action
		if err := a.UnmarshalText([]byte(in)); err != nil || a != want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", in, a, err, want)
		}
	}
	for _, bad := range []string{"pass", "BLOCK", " block", "", "drop"} {
		a := Alert
		if err := a.UnmarshalText([]byte(bad)); err == nil || a != Alert {
			t.Errorf("UnmarshalText(%q) = %v, %v; want an error and no change", bad, a, err)
		}
	}
}
