package apiclient

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	tok := "t0k-" + strings.Repeat("x", 20)
	tests := []struct {
		name, admin, tenant string
		env                 map[string]string
		wantBase, wantAuth  string // wantAuth "": an error wrapping ErrUsage
	}{
		{"tenant token", "", "acme", map[string]string{EnvToken: tok}, "http://127.0.0.1:8080", "Bearer acme:" + tok},
		{"token with its tenant", "", "", map[string]string{EnvToken: "acme:" + tok}, "http://127.0.0.1:8080", "Bearer acme:" + tok},
		{"admin from env", "", "acme", map[string]string{EnvToken: tok, EnvAdmin: "https://sluice.test"}, "https://sluice.test", "Bearer acme:" + tok},
		{"flag over env", "http://a.test:1", "acme", map[string]string{EnvToken: tok, EnvAdmin: "https://sluice.test"}, "http://a.test:1", "Bearer acme:" + tok},
		{"user", "", "", map[string]string{EnvUser: "ann", EnvPassword: "pw"}, "http://127.0.0.1:8080", "Basic YW5uOnB3"},
		{"token without tenant", "", "", map[string]string{EnvToken: tok}, "", ""},
		{"no credentials", "", "acme", nil, "", ""},
		{"credentials in the URL", "http://u:p@a.test", "acme", map[string]string{EnvToken: tok}, "", ""},
		{"not a URL", "a.test:8080", "acme", map[string]string{EnvToken: tok}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(tc.admin, "http://127.0.0.1:8080", tc.tenant, func(k string) string { return tc.env[k] })
			if tc.wantAuth == "" {
				if !errors.Is(err, ErrUsage) {
					t.Fatalf("err = %v, want ErrUsage", err)
				}
				if strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), ":p@") {
					t.Fatalf("the error holds a credential: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Base.String() != tc.wantBase {
				t.Errorf("base %s, want %s", c.Base, tc.wantBase)
			}
			r, _ := http.NewRequest(http.MethodGet, "http://x.test", nil)
			c.Auth(r)
			if got := r.Header.Get("Authorization"); got != tc.wantAuth {
				t.Errorf("Authorization %q, want %q", got, tc.wantAuth)
			}
		})
	}
}
