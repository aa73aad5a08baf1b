package scanner

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/config"
)

// ruleIDs is the ids of the rules the engine finds in text, joined.
func ruleIDs(t *testing.T, r *Rules, text string) string {
	t.Helper()
	var got []string
	if err := r.eng.detect(context.Background(), text, func(m match) { got = append(got, r.eng.rules[m.rule].cfg.RuleID) }); err != nil {
		t.Fatal(err)
	}
	return strings.Join(got, ",")
}

// withLine is the PEM block key with line added after its second line.
func withLine(key, line string) string {
	lines := strings.Split(key, "\n")
	return strings.Join(append(append(append([]string(nil), lines[:2]...), line), lines[2:]...), "\n")
}

// gitleaks' global allowlist means to let a secret that is only "true",
// "false" or "null" pass; as written it lets any secret holding "false"
// pass. A private key with a line that says "false" is found here (gitleaks
// lets it out), and the words alone still pass.
func TestWordAllowlistAnchored(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	key := MustFake(t, "private-key")
	line3 := strings.Split(key, "\n")[3]
	for name, text := range map[string]string{
		"a line that says false": withLine(key, "false"),
		"false inside a line":    strings.Replace(key, line3, line3[:10]+"faLSe"+line3[15:], 1),
	} {
		if got := ruleIDs(t, r, "key: "+text+"\n"); !strings.Contains(got, "private-key") {
			t.Errorf("%s: private key not found (findings %q)", name, got)
		}
	}

	lists, err := tightenAllowlists(r.cfg.Allowlists)
	if err != nil {
		t.Fatal(err)
	}
	pass := func(s string) bool { return allowed(lists, s, s, s, onlyStopword) }
	for _, s := range []string{"true", "false", "null", "FALSE", "True"} {
		if !pass(s) {
			t.Errorf("%q: want allowed, as gitleaks means it", s)
		}
	}
	for _, s := range []string{"xfalsex", "trueSecret9f8e7d", "sk-a1b2c3null", "AbCdfalse12345678"} {
		if pass(s) {
			t.Errorf("%q: allowed, want it checked like any secret", s)
		}
	}
}

// gitleaks' global stopwords ("abcdefghijklmnopqrstuvwxyz" and a sample
// UUID) let any secret of any rule pass that holds one: a private key with
// a line saying one of them goes out. Here they let pass only the
// placeholders they are meant for.
func TestGlobalStopwordsOnlyPlaceholders(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	var stops []string
	for _, a := range r.cfg.Allowlists {
		stops = append(stops, a.StopWords...)
	}
	if len(stops) == 0 {
		t.Fatal("the default rules have no global stopwords: the test reads nothing")
	}
	s := testScanner(t)
	key := MustFake(t, "private-key")
	for _, w := range append(stops, strings.ToUpper(stops[0])) {
		padded := withLine(key, w)
		if got := ruleIDs(t, r, "key: "+padded+"\n"); !strings.Contains(got, "private-key") {
			t.Errorf("a private key with a line %q: not found (findings %q)", w, got)
		}
		res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"text/plain"}},
			Body: strings.NewReader("key: " + padded + "\n")})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Block {
			t.Errorf("a private key with a line %q: verdict %v, want block", w, res.Verdict)
		}
	}

	pass := func(secret string) bool { return allowed(r.cfg.Allowlists, secret, secret, secret, onlyStopword) }
	for _, p := range append([]string{"abcdefghijklmnopqrstuvwxyz0123456789",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"}, stops...) {
		if !pass(p) {
			t.Errorf("placeholder %q: want allowed, as gitleaks does", p)
		}
	}
	for _, p := range []string{"abcdefghijklmnopqrstuvwxyz0123456789x", "k3Y9abcdefghijklmnopqrstuvwxyzQ7w2Z8pL4m",
		stops[len(stops)-1] + "-9f8e7d6c5b4a"} {
		if pass(p) {
			t.Errorf("%q: allowed, want it checked like any secret", p)
		}
	}
}

// Two rules' allowlist regexes of gitleaks, unanchored, let real secrets
// pass: vault-service-token's (meant for an "s." token of letters alone)
// every "hvs." token whose first 24 characters are letters, and
// curl-auth-user's placeholder passwords every password that starts with
// one ("x…", "test…"). They are found here; the placeholders still pass.
func TestRuleAllowlistsAnchored(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	hvs := "hvs.CAESIkWqTnRbXzPmLcVhJdGsYf" + "8rA2-x9Lq4Zb7Nw1Kp6Mv3Jc5Hd0Tg8Ys2Ue7Wi4Ro9Pa1Sl6Fk3Dj5Gh0Qz2Xn8Bm4Cv7" + "_a1B2c3D4e5F6g7H8"
	for name, c := range map[string]struct {
		text, rule string
		found      bool
	}{
		"hvs token, letters first":  {"VAULT_TOKEN=" + hvs + "\n", "vault-service-token", true},
		"s. token of letters alone": {"VAULT_TOKEN=s.abcdefghijklmnopqrstuvwx\n", "vault-service-token", false},
		"curl password starting x":  {"curl -u deploy:xK9mP2qR7vT4 https://api.example.test/\n", "curl-auth-user", true},
		"curl password test...":     {"curl -u admin:testW8nQ3zL5 https://api.example.test/\n", "curl-auth-user", true},
		"curl placeholder password": {"curl -u admin:password https://api.example.test/\n", "curl-auth-user", false},
		"curl placeholder x's":      {"curl -u 'user:xxxx' https://api.example.test/\n", "curl-auth-user", false},
	} {
		if got := ruleIDs(t, r, c.text); strings.Contains(got, c.rule) != c.found {
			t.Errorf("%s: findings %q, want %s found: %v", name, got, c.rule, c.found)
		}
	}
}

// generic-api-key's own stopwords ("client", "access", "admin"…) let a
// secret pass that holds one in gitleaks, so that a key of no known format
// goes out with a word added before, after or inside it. Here it is found
// unless, the stopwords cut out, nothing generated-looking is left: the
// values the stopwords are there for still pass.
func TestRuleStopwordsBesideAKey(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	var generic *config.Allowlist
	for _, er := range r.eng.rules {
		if er.cfg.RuleID == "generic-api-key" {
			for _, a := range er.cfg.Allowlists {
				if len(a.StopWords) > 0 {
					generic = a
				}
			}
		}
	}
	if generic == nil || len(generic.StopWords) < 100 {
		t.Fatal("generic-api-key has no stopwords: the test reads nothing")
	}
	key := "Xk9mP2qR7sT4vW8yZ1aB3cD5eF6gH"
	for _, w := range []string{"client", "access", "admin", generic.StopWords[len(generic.StopWords)/2]} {
		for _, secret := range []string{w + key, key + w, key[:12] + w + key[12:], strings.ToUpper(w) + key} {
			text := `const apiKey = "` + secret + `";` + "\n"
			if got := ruleIDs(t, r, text); !strings.Contains(got, "generic-api-key") {
				t.Errorf("%q: not found (findings %q)", text, got)
			}
		}
	}
	for _, v := range []string{"client_credentials_grant", "access_token_url_v2", "adminPanelTokenRefresh",
		"client-3f2b9c1e-7a4d-4e8b-9c6f-1a2b3c4d5e6f"} {
		if got := ruleIDs(t, r, `api_token = "`+v+`"`+"\n"); got != "" {
			t.Errorf("%q: found (%q), want it to pass as in gitleaks", v, got)
		}
	}
}
