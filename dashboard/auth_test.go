package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

func TestPrincipal(t *testing.T) {
	tests := []struct {
		name     string
		p        Principal
		atLeast  map[Role]bool
		sees     string
		wantSees bool
	}{
		{"viewer", Principal{Name: "v", Role: RoleViewer},
			map[Role]bool{RoleViewer: true, RoleReviewer: false, RoleAdmin: false, RoleTenant: false}, "acme", true},
		{"reviewer", Principal{Name: "r", Role: RoleReviewer},
			map[Role]bool{RoleViewer: true, RoleReviewer: true, RoleAdmin: false, RoleTenant: false}, "globex", true},
		{"admin", Principal{Name: "a", Role: RoleAdmin},
			map[Role]bool{RoleViewer: true, RoleReviewer: true, RoleAdmin: true, RoleTenant: false}, "", true},
		{"tenant own", Principal{Name: "tenant:acme", Role: RoleTenant, Tenant: "acme"},
			map[Role]bool{RoleViewer: false, RoleReviewer: false, RoleAdmin: false, RoleTenant: true}, "acme", true},
		{"tenant other", Principal{Name: "tenant:acme", Role: RoleTenant, Tenant: "acme"}, nil, "globex", false},
		{"tenant empty", Principal{Name: "tenant:acme", Role: RoleTenant, Tenant: "acme"}, nil, "", false},
		{"tenant without tenant", Principal{Role: RoleTenant},
			map[Role]bool{RoleViewer: false, RoleTenant: false}, "", false},
		{"zero", Principal{}, map[Role]bool{RoleViewer: false, RoleAdmin: false, RoleTenant: false, "": false}, "acme", false},
		{"unknown role", Principal{Role: "root"}, map[Role]bool{RoleViewer: false, RoleAdmin: false, "root": false}, "acme", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for r, want := range tc.atLeast {
				if got := tc.p.AtLeast(r); got != want {
					t.Errorf("AtLeast(%q) = %v, want %v", r, got, want)
				}
			}
			if got := tc.p.SeesTenant(tc.sees); got != tc.wantSees {
				t.Errorf("SeesTenant(%q) = %v, want %v", tc.sees, got, tc.wantSees)
			}
		})
	}
	if _, ok := PrincipalFrom(context.Background()); ok {
		t.Fatal("a principal in an empty context")
	}
	p, ok := PrincipalFrom(WithPrincipal(context.Background(), Principal{Name: "x", Role: RoleAdmin}))
	if !ok || p.Name != "x" {
		t.Fatalf("round trip: %+v %v", p, ok)
	}
}

func TestPasswords(t *testing.T) {
	argon, err := HashPassword("s3cret pass")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(argon, "$argon2id$v=19$m=65536,t=3,p=4$") {
		t.Fatalf("hash %q", argon)
	}
	again, _ := HashPassword("s3cret pass")
	if again == argon {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	bc := mustHash(t, "s3cret pass")
	// A cheap argon2id hash from elsewhere (m=64 KiB, t=1, p=1).
	tests := []struct {
		name, hash, password string
		want                 bool
		hashOK               bool
	}{
		{"argon2id right", argon, "s3cret pass", true, true},
		{"argon2id wrong", argon, "s3cret pasS", false, true},
		{"argon2id empty", argon, "", false, true},
		{"bcrypt right", bc, "s3cret pass", true, true},
		{"bcrypt wrong", bc, "s3cret", false, true},
		{"plain text is not a hash", "s3cret pass", "s3cret pass", false, false},
		{"empty hash", "", "", false, false},
		{"argon2i", strings.Replace(argon, "argon2id", "argon2i", 1), "s3cret pass", false, false},
		{"argon2id v=16", strings.Replace(argon, "v=19", "v=16", 1), "s3cret pass", false, false},
		{"argon2id huge memory", strings.Replace(argon, "m=65536", "m=99999999", 1), "s3cret pass", false, false},
		{"argon2id zero time", strings.Replace(argon, "t=3", "t=0", 1), "s3cret pass", false, false},
		{"argon2id unknown param", strings.Replace(argon, "p=4", "x=4", 1), "s3cret pass", false, false},
		{"argon2id truncated", argon[:len(argon)-30], "s3cret pass", false, false},
		{"argon2id other params", strings.Replace(argon, "t=3", "t=2", 1), "s3cret pass", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CheckPassword(tc.hash, tc.password); got != tc.want {
				t.Errorf("CheckPassword = %v, want %v", got, tc.want)
			}
			if err := CheckHash(tc.hash); (err == nil) != tc.hashOK {
				t.Errorf("CheckHash = %v, want ok %v", err, tc.hashOK)
			}
			if err := CheckHash(tc.hash); err != nil && !errors.Is(err, ErrBadHash) {
				t.Errorf("CheckHash error %v is not ErrBadHash", err)
			}
		})
	}
}

func FuzzParseArgon2id(f *testing.F) {
	f.Add("$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5")
	f.Add("$argon2id$v=19$m=,t=,p=$$")
	f.Add("$argon2id$$$$$$$")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := parseArgon2id(s)
		if err != nil {
			return
		}
		if a.memory > argonMaxMemory || a.time > argonMaxTime || a.threads == 0 || len(a.salt) < 8 || len(a.key) < 16 {
			t.Fatalf("accepted out-of-range parameters: %+v", a)
		}
	})
}

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &Limiter{Max: 3, Window: time.Minute, Now: func() time.Time { return now }}
	for i := range 3 {
		if !l.Allow("k") {
			t.Fatalf("refused after %d failures", i)
		}
		l.Fail("k")
	}
	if l.Allow("k") {
		t.Fatal("allowed after 3 failures")
	}
	if !l.Allow("other") {
		t.Fatal("another key refused")
	}
	now = now.Add(time.Minute)
	if !l.Allow("k") {
		t.Fatal("still refused after the window")
	}
	l.Fail("k")
	l.Reset("k")
	if !l.Allow("k") {
		t.Fatal("refused after Reset")
	}
}

// TestLoginThrottledPerUser: failures for one user from many addresses
// lock that user (not others); failures from one address lock it for
// every user.
func TestLoginThrottledPerUser(t *testing.T) {
	a := newAuth(Options{Users: []User{
		{Name: "ada", Role: RoleAdmin, Hash: mustHash(t, "right password")},
		{Name: "bob", Role: RoleViewer, Hash: mustHash(t, "right password")},
	}})
	req := func(ip string) *http.Request {
		r := httptest.NewRequest("POST", "/login", nil)
		r.RemoteAddr = ip + ":1234"
		return r
	}
	for i := range 10 {
		if _, err := a.Login(req("192.0.2."+string(rune('1'+i%9))), "ada", "wrong"); err == nil || errors.Is(err, errThrottled) {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	if _, err := a.Login(req("198.51.100.1"), "ada", "right password"); !errors.Is(err, errThrottled) {
		t.Fatalf("user not throttled: %v", err)
	}
	if p, err := a.Login(req("198.51.100.1"), "bob", "right password"); err != nil || p.Role != RoleViewer {
		t.Fatalf("another user throttled: %v", err)
	}
	for range 10 {
		a.Login(req("203.0.113.5"), "nobody", "x")
	}
	if _, err := a.Login(req("203.0.113.5"), "bob", "right password"); !errors.Is(err, errThrottled) {
		t.Fatalf("address not throttled: %v", err)
	}
}

func TestBearer(t *testing.T) {
	identify := func(user, token string) (rules.Identity, error) {
		switch {
		case user == "acme" && token == "good":
			return rules.Identity{Tenant: "acme", Class: "agent"}, nil
		case user == "acme" && token == "run-token":
			return rules.Identity{Tenant: "acme", Class: "agent", Run: "run_1"}, nil
		}
		return rules.Identity{}, rules.ErrUnauthenticated
	}
	a := newAuth(Options{Identify: identify})
	var got Principal
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = PrincipalFrom(r.Context())
	}))
	tests := []struct {
		name, authz string
		code        int
		tenant      string
	}{
		{"tenant token", "Bearer acme:good", 200, "acme"},
		{"lower-case scheme", "bearer acme:good", 200, "acme"},
		{"run token refused", "Bearer acme:run-token", 401, ""},
		{"wrong token", "Bearer acme:bad", 401, ""},
		{"no colon", "Bearer acmegood", 401, ""},
		{"empty", "Bearer ", 401, ""},
		{"other tenant's name", "Bearer globex:good", 401, ""},
		{"unknown scheme", "Digest x", 401, ""},
		{"basic without users", "Basic YWRhOng=", 401, ""},
		{"none", "", 401, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = Principal{}
			r := httptest.NewRequest("GET", "/api/incidents", nil)
			r.RemoteAddr = "192.0.2.200:1"
			if tc.authz != "" {
				r.Header.Set("Authorization", tc.authz)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tc.code {
				t.Fatalf("code %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if tc.code == 200 && (got.Role != RoleTenant || got.Tenant != tc.tenant) {
				t.Fatalf("principal %+v", got)
			}
			if tc.code == 401 && (got != Principal{}) {
				t.Fatal("handler ran")
			}
		})
	}
}
