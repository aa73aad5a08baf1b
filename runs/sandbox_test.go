package runs_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
)

// claims is a Sandboxes that refuses a prefix claimed by another run.
type claims map[netip.Prefix]rules.Identity

func (c claims) Claim(p netip.Prefix, id rules.Identity) error {
	if o, ok := c[p]; ok && o != id {
		return errors.New("taken")
	}
	c[p] = id
	return nil
}

func (c claims) Release(run string) {
	for p, id := range c {
		if id.Run == run {
			delete(c, p)
		}
	}
}

func TestParseSandbox(t *testing.T) {
	good := map[[2]string]string{
		{"10.1.2.3", ""}:            "10.1.2.3/32",
		{"::ffff:10.1.2.3", ""}:     "10.1.2.3/32",
		{"2001:db8::7", ""}:         "2001:db8::7/128",
		{"", "10.244.3.9/24"}:       "10.244.3.0/24",
		{"", "fd00:1:2:3::/64"}:     "fd00:1:2:3::/64",
		{"", "::ffff:10.1.0.0/112"}: "10.1.0.0/16",
	}
	for in, want := range good {
		p, err := runs.ParseSandbox(in[0], in[1])
		if err != nil || p.String() != want {
			t.Errorf("%q: %v %v, want %s", in, p, err, want)
		}
	}
	if p, err := runs.ParseSandbox("", ""); err != nil || p.IsValid() {
		t.Errorf("none: %v %v", p, err)
	}
	for _, in := range [][2]string{
		{"10.1.2.3", "10.1.0.0/16"}, {"x", ""}, {"127.0.0.1", ""}, {"0.0.0.0", ""}, {"fe80::1%eth0", ""},
		{"", "10.0.0.0/8"}, {"", "0.0.0.0/0"}, {"", "fd00::/8"}, {"", "10.1.2.3"},
	} {
		if _, err := runs.ParseSandbox(in[0], in[1]); !errors.Is(err, runs.ErrInvalid) {
			t.Errorf("%q: err %v, want ErrInvalid", in, err)
		}
	}
}

func TestRunSandbox(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	p := netip.MustParsePrefix("10.9.0.7/32")

	if _, err := w.svc.CreateRun(ctx, runs.Request{Tenant: "acme", TTL: time.Hour, Sandbox: p}); !errors.Is(err, runs.ErrInvalid) {
		t.Fatalf("a sandbox address without Sandboxes: %v", err)
	}
	c := claims{}
	w.svc.Sandboxes = c
	run, err := w.svc.CreateRun(ctx, runs.Request{Tenant: "acme", TTL: time.Hour, Sandbox: p})
	if err != nil {
		t.Fatal(err)
	}
	if c[p] != (rules.Identity{Tenant: "acme", Class: "agent", Run: run.Run.ID}) {
		t.Fatalf("claims %v", c)
	}
	other, err := w.svc.CreateRun(ctx, runs.Request{Tenant: "acme", TTL: time.Hour, Sandbox: p})
	if !errors.Is(err, runs.ErrInvalid) {
		t.Fatalf("a second run on the same address: %v", err)
	}
	if _, err := w.engine.Identify("acme", other.Token); err == nil && other.Token != "" {
		t.Fatal("the refused run's token works")
	}

	// A restart (a new engine on the same store) claims the address again for the run.
	clear(c)
	cfg, _ := config.Parse([]byte(policy), "sluice.yaml")
	cfg.Validate()
	w.engine, _ = rules.Compile(cfg.Policy(), cfg.Token)
	w.svc = &runs.Service{Store: w.store, Engine: w.svc.Engine, Resolve: w.svc.Resolve, Gateway: w.svc.Gateway,
		Sandboxes: c, Logger: w.svc.Logger}
	if err := w.svc.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if c[p].Run != run.Run.ID {
		t.Fatalf("after a restart: %v", c)
	}
	if _, err := w.svc.EndRun(ctx, run.Run.ID, "ada"); err != nil {
		t.Fatal(err)
	}
	if len(c) != 0 {
		t.Fatalf("the ended run's address is still claimed: %v", c)
	}
}
