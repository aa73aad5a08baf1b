package runs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

func TestRequestAccess(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	filed := time.Now().Truncate(time.Second)
	x, err := w.svc.RequestAccess(ctx, runs.AccessInput{Tenant: "acme", Host: " pkg.example.test ", Justification: " builds ",
		TTL: "2h", Actor: "acme", Filed: filed})
	if err != nil {
		t.Fatal(err)
	}
	if x.ID == "" || x.Host != "pkg.example.test" || x.Justification != "builds" || x.State != store.AccessPending ||
		!x.ExpiresAt.Equal(filed.Add(2*time.Hour)) {
		t.Fatalf("request %+v", x)
	}
	if got, err := w.st.GetAccessRequest(ctx, x.ID); err != nil || got.Host != x.Host {
		t.Fatalf("not stored: %+v, %v", got, err)
	}
	bad := map[string]runs.AccessInput{
		"no tenant":        {Host: "a.example.test", Justification: "j"},
		"unknown tenant":   {Tenant: "nobody", Host: "a.example.test", Justification: "j"},
		"no justification": {Tenant: "acme", Host: "a.example.test", Justification: "  "},
		"long":             {Tenant: "acme", Host: "a.example.test", Justification: strings.Repeat("j", runs.MaxJustification+1)},
		"ttl and expiry":   {Tenant: "acme", Host: "a.example.test", Justification: "j", TTL: "1h", ExpiresAt: filed.Add(time.Hour)},
		"bad ttl":          {Tenant: "acme", Host: "a.example.test", Justification: "j", TTL: "soon"},
		"past":             {Tenant: "acme", Host: "a.example.test", Justification: "j", ExpiresAt: filed.Add(-time.Hour), Filed: filed},
		"too long a life":  {Tenant: "acme", Host: "a.example.test", Justification: "j", TTL: "2400h"},
		"bad host":         {Tenant: "acme", Host: "*", Justification: "j"},
		"metadata address": {Tenant: "acme", Host: "169.254.169.254", Justification: "j"},
	}
	for name, in := range bad {
		if _, err := w.svc.RequestAccess(ctx, in); !errors.Is(err, runs.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	def, err := w.svc.RequestAccess(ctx, runs.AccessInput{Tenant: "acme", Host: "b.example.test", Justification: "j", Filed: filed})
	if err != nil || !def.ExpiresAt.Equal(filed.Add(runs.DefaultAccessTTL)) {
		t.Fatalf("default expiry: %+v, %v", def, err)
	}
}
