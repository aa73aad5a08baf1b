package config

import (
	"errors"
	"testing"

	"github.com/sluice-egress/sluice/rules"
)

// A link may go where the class may connect, and nowhere else; with several
// tenants and none named, there is no answer rather than a guess.
func TestLinkAllowed(t *testing.T) {
	one := &Config{Tenants: map[string]*Tenant{"acme": {TokenEnv: "X", Classes: map[string]*rules.Class{
		"agent": {Allow: []rules.Entry{{Host: "docs.example.test"}}}}}}}
	allowed, err := one.LinkAllowed("", "agent")
	if err != nil {
		t.Fatal(err)
	}
	if !allowed("docs.example.test") || !allowed("DOCS.example.test") || allowed("drop.evil.test") {
		t.Error("the only tenant's class is not what decides")
	}
	two := &Config{Tenants: map[string]*Tenant{"acme": one.Tenants["acme"], "globex": {TokenEnv: "X"}}}
	if _, err := two.LinkAllowed("", "agent"); !errors.Is(err, ErrWhichTenant) {
		t.Errorf("several tenants, none named: %v", err)
	}
	if allowed, err := two.LinkAllowed("acme", "agent"); err != nil || !allowed("docs.example.test") {
		t.Errorf("--tenant acme: %v", err)
	}
}
