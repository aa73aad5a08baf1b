package rules

import (
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		raw  string
		want Target
		bad  bool
	}{
		{raw: "https://api.example.test/v1/x", want: Target{"https", "api.example.test", 443, "/v1/x"}},
		{raw: "http://api.example.test", want: Target{"http", "api.example.test", 80, ""}},
		{raw: "https://api.example.test:8443/a%2Fb", want: Target{"https", "api.example.test", 8443, "/a%2Fb"}},
		{raw: "ftp://api.example.test/", bad: true},
		{raw: "api.example.test", bad: true},
		{raw: "https://api.example.test:0/", bad: true},
		{raw: "https://api.example.test:70000/", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := ParseTarget(tc.raw)
			if tc.bad {
				if err == nil {
					t.Fatalf("ParseTarget = %+v, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseTarget = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	f := MustFixture(t, policyConfig, "acme", "globex")
	p, err := ResolvePolicy(PolicyInput{Policy: f.pol, Tenant: "acme", Class: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		raw, method, stage, action string
		allowed                    bool
	}{
		{"https://api.example.test/v1", "post", "request", "allow", true},
		{"https://elsewhere.example.test/", "GET", "connect", "deny", false},
		{"http://elsewhere.example.test/", "GET", "request", "deny", false},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			tg, err := ParseTarget(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			c := p.Check(tc.method, tg)
			if c.Stage != tc.stage || c.Action != tc.action || c.Allowed != tc.allowed || c.Method != strings.ToUpper(tc.method) {
				t.Fatalf("Check = %+v; want stage %s, action %s", c, tc.stage, tc.action)
			}
			if c.Allowed && (c.Entry == nil || c.Origin == "") {
				t.Fatalf("an allowed check names no entry: %+v", c)
			}
		})
	}
}

func TestEntryLimits(t *testing.T) {
	if got, want := (Entry{}).Limits(), "ports 443,80  methods any"; got != want {
		t.Errorf("Limits = %q, want %q", got, want)
	}
	en := Entry{Ports: []int{8443}, Methods: []string{"GET", "HEAD"}, Paths: []string{"/v1/"}, WebSocket: true, AllowAddresses: []string{"10.0.0.0/8"}}
	if got, want := en.Limits(), "ports 8443  methods GET,HEAD  paths /v1/  websocket  allow_addresses 10.0.0.0/8"; got != want {
		t.Errorf("Limits = %q, want %q", got, want)
	}
}
