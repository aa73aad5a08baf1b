package scanner

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// fakes build random credentials in real formats, so that tests and
// corpora never hold a real-looking token as a literal.
var fakes = map[string]func() string{
	"github-pat":              func() string { return githubToken("ghp_") },
	"github-oauth":            func() string { return githubToken("gho_") },
	"github-fine-grained-pat": func() string { return "github_pat_" + randomString(base62+"_", 82) },
	"gitlab-pat":              func() string { return "glpat-" + randomString(base62, 20) },
	"aws-access-token":        func() string { return "AKIA" + randomString(base32Upper, 16) },
	"aws-secret":              func() string { return randomString(base64Chars, 40) },
	"openai-api-key": func() string {
		return "sk-proj-" + randomString(base62, 58) + "T3Blbk" + "FJ" + randomString(base62, 58)
	},
	"anthropic-api-key": func() string { return "sk-ant-" + "api03-" + randomString(base62, 93) + "AA" },
	"slack-bot-token": func() string {
		return "xoxb-" + randomString("0123456789", 12) + "-" + randomString("0123456789", 12) + "-" + randomString(base62, 24)
	},
	"stripe-access-token": func() string { return "sk_" + "live_" + randomString(base62, 32) },
	"gcp-api-key":         func() string { return "AIza" + randomString(base62+"_-", 35) },
	"jwt": func() string {
		enc := base64.RawURLEncoding
		return enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." +
			enc.EncodeToString([]byte(`{"sub":"`+randomString(base62, 12)+`","admin":true,"iat":1700000000}`)) + "." +
			randomString(base62+"_-", 43)
	},
	"private-key": func() string {
		var b strings.Builder
		b.WriteString("-----BEGIN RSA " + "PRIVATE KEY-----\n")
		for range 8 {
			b.WriteString(randomString(base64Chars, 64) + "\n")
		}
		b.WriteString("-----END RSA " + "PRIVATE KEY-----")
		return b.String()
	},
}

// FakeKinds lists the kinds FakeSecret can make.
func FakeKinds() []string {
	ks := make([]string, 0, len(fakes))
	for k := range fakes {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// FakeSecret returns a random credential of kind (see FakeKinds) in its
// real format. It grants nothing anywhere.
func FakeSecret(kind string) (string, error) {
	f, ok := fakes[kind]
	if !ok {
		return "", fmt.Errorf("scanner: no fake of kind %q (known: %s)", kind, strings.Join(FakeKinds(), ", "))
	}
	// A random value now and then repeats enough to fall under a rule's
	// entropy floor (3 for most), and no tool would call it a secret: a fake
	// is drawn again until it looks like what it imitates.
	v := f()
	for range 16 {
		if shannonEntropy(v) > 3.5 {
			break
		}
		v = f()
	}
	return v, nil
}

var fakeRE = regexp.MustCompile(`\$\{fake:([a-z0-9-]+)(?::([a-z0-9]+))?(?:\|(base64|base64url|hex|percent))?\}`)

// ExpandFakes replaces ${fake:KIND} with a fresh fake of KIND and
// ${fake:KIND:NAME} with one fake per NAME (repeated uses agree), so that
// corpus files can be committed without a single token in them. A suffix
// |base64, |base64url, |hex or |percent encodes the fake (the whole value,
// "key: " prefix included for base64 and hex, as agents tend to).
func ExpandFakes(text string) (string, error) {
	named := map[string]string{}
	var err error
	out := fakeRE.ReplaceAllStringFunc(text, func(m string) string {
		sm := fakeRE.FindStringSubmatch(m)
		key := sm[1] + ":" + sm[2]
		v, ok := named[key]
		if !ok || sm[2] == "" {
			var e error
			if v, e = FakeSecret(sm[1]); e != nil {
				err = e
				return m
			}
			named[key] = v
		}
		switch sm[3] {
		case "base64":
			return base64.StdEncoding.EncodeToString([]byte("token: " + v))
		case "base64url":
			return base64.RawURLEncoding.EncodeToString([]byte("token: " + v))
		case "hex":
			return hex.EncodeToString([]byte("token: " + v))
		case "percent":
			return percentEncode(v)
		}
		return v
	})
	return out, err
}
