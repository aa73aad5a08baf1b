package scanner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
)

// The differential test: gitleaks' own detector and our engine read the
// same texts, and every finding gitleaks reports must be ours too. The
// texts are each rule's format (a random string of its regex) in random
// surroundings, at random offsets and across window sizes.
//
// Deliberate differences, where we report more than gitleaks:
//   - documentation example values ("AKIA…EXAMPLE") are found
//     (findExamples); operators allow a rule per host if they must;
//   - a secret that merely holds "false" (or starts with "true", or ends
//     with "null") is found: gitleaks' global allowlist `(?i)^true|false|null$`
//     lets those pass for want of a group, where it means the words alone
//     (tightAllow); a private key with a line saying "false" would go out;
//   - a "hvs." Vault token whose first 24 characters are letters, and a
//     curl password that starts with a placeholder ("x…", "test…"), are
//     found: vault-service-token's and curl-auth-user's allowlist regexes
//     are unanchored (tightAllow);
//   - a secret that holds one of the global stopwords ("abcdefghijklmnop…",
//     a sample UUID) and more than a few other letters and digits is found:
//     gitleaks lets a secret of any rule pass that holds one (onlyStopword);
//     a private key with a line saying one would go out;
//   - a secret that holds one of a rule's own stopwords (generic-api-key's
//     "client", "access"…) is found when, with them cut out, a run of 16
//     or more letters and digits with both in it is left (stopwordBesideNoKey):
//     gitleaks lets it pass, so a word added to a key gets it out;
//   - a "gitleaks:allow" comment on the line does not hide a finding: the
//     sender of a request would write it;
//   - a composite rule (requiredRules) reports its primary finding without
//     checking its required rules (rules marked skipReport, which only
//     feed composites, are not run).
//
// And one where we may report less: a match of a rule that is not
// token-bounded (a PEM block, a curl command line) longer than maxSpanSide
// around its keyword.

func gitleaksDetector(tb testing.TB, r *Rules) *detect.Detector {
	tb.Helper()
	d := detect.NewDetector(r.cfg)
	d.MaxDecodeDepth = 0
	return d
}

type found struct{ rule, secret string }

func engineFindings(tb testing.TB, r *Rules, text string) map[found]bool {
	tb.Helper()
	out := map[found]bool{}
	err := r.eng.detect(context.Background(), text, func(m match) {
		out[found{r.eng.rules[m.rule].cfg.RuleID, m.secret}] = true
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// fillers are surrounding texts of different kinds: prose, code dense with
// keywords, base64-ish noise.
var fillers = []string{
	"the agent reads the file and writes a patch for the failing test then runs vet and reports back ",
	"func (c *Client) auth(key string, token []byte) error { secret := c.cfg.APIKey; return c.do(\"access\", key) }\n",
	"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkwYWJjZGVmZ2hpams+/",
	"{\"role\":\"tool\",\"content\":\"password: hunter2 they key money\\n\"} ",
}

func filler(r *rand.Rand, n int) string {
	var b strings.Builder
	f := fillers[r.IntN(len(fillers))]
	for b.Len() < n {
		b.WriteString(f)
	}
	return b.String()[:n]
}

var seps = []string{" ", "\n", " = ", ": ", "\"", "'", "\t", "="}

func TestDifferentialEngine(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	det := gitleaksDetector(t, r)
	rnd := rand.New(rand.NewPCG(7, 11))
	samples := 12
	if testing.Short() {
		samples = 3
	}
	var compared, missed int
	seenRule := map[string]bool{}
	for _, er := range r.eng.rules {
		p, err := syntax.Parse(er.cfg.Regex.String(), syntax.Perl)
		if err != nil {
			t.Fatalf("%s: %v", er.cfg.RuleID, err)
		}
		for i := range samples {
			sample := sampleFor(rnd, p)
			pre := []int{0, 1, windowSide - 1, windowSide + windowMargin, rnd.IntN(3000)}[i%5]
			text := filler(rnd, pre) + seps[rnd.IntN(len(seps))] + sample + seps[rnd.IntN(len(seps))] + filler(rnd, rnd.IntN(600))
			gl := det.DetectString(text)
			ours := engineFindings(t, r, text)
			for _, g := range gl {
				compared++
				seenRule[g.RuleID] = true
				if !ours[found{g.RuleID, g.Secret}] {
					missed++
					t.Errorf("%s: gitleaks finds %q at offset %d, we do not (sample %q)", g.RuleID, g.Secret, pre, sample)
				}
			}
		}
	}
	t.Logf("%d gitleaks findings compared over %d rules, %d missed", compared, len(seenRule), missed)
	if len(seenRule) < len(r.eng.rules)/2 {
		t.Errorf("gitleaks found only %d of %d rules' samples: the generator is broken", len(seenRule), len(r.eng.rules))
	}
}

// TestDifferentialRequests embeds each rule's format in the places a
// request carries it and compares gitleaks on the request as text with the
// scanner on the request.
func TestDifferentialRequests(t *testing.T) {
	s := testScanner(t)
	r := s.Rules
	if err := s.init(); err != nil {
		t.Fatal(err)
	}
	det := gitleaksDetector(t, r)
	rnd := rand.New(rand.NewPCG(3, 5))
	places := []string{"json", "form", "header", "query", "multipart", "text"}
	var compared int
	for _, er := range r.eng.rules {
		p, _ := syntax.Parse(er.cfg.Regex.String(), syntax.Perl)
		for i, place := range places {
			sample := sampleFor(rnd, p)
			if strings.ContainsAny(sample, "\"\\\r\x00") {
				continue // would be escaped differently in each form
			}
			pre := filler(rnd, rnd.IntN(400)) + " "
			req, text := requestWith(t, place, pre+sample+" "+filler(rnd, 50), i)
			gl := det.DetectString(text)
			if len(gl) == 0 {
				continue
			}
			res, err := s.Scan(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range gl {
				if !strings.Contains(sample, g.Secret) {
					continue // found in the scaffolding, not the sample
				}
				compared++
				if !gitleaksFound(g, res.Findings) {
					t.Errorf("%s in %s: gitleaks finds %q, we do not:%s", g.RuleID, place, g.Secret, dump(res.Findings))
				}
			}
		}
	}
	t.Logf("%d gitleaks findings compared", compared)
}

func gitleaksFound(g report.Finding, fs []Finding) bool {
	for _, f := range fs {
		sec := string(f.secret)
		if sec == g.Secret || g.RuleID == "generic-api-key" && (strings.Contains(sec, g.Secret) || strings.Contains(g.Secret, sec)) {
			return true
		}
	}
	return false
}

// requestWith puts v into a request at place and returns the request and
// the same request as one text, for gitleaks.
func requestWith(tb testing.TB, place, v string, n int) (*Request, string) {
	tb.Helper()
	u, _ := url.Parse("https://api.example.test/v1/upload")
	h := http.Header{}
	var body string
	switch place {
	case "json":
		h.Set("Content-Type", "application/json")
		body = fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":%q}]}`, v)
	case "form":
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		body = "a=1&data=" + url.QueryEscape(v)
	case "header":
		h.Set("X-Data", v)
	case "query":
		u.RawQuery = "q=" + url.QueryEscape(v)
	case "multipart":
		h.Set("Content-Type", "multipart/form-data; boundary=b0undary")
		body = "--b0undary\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n" + v + "\r\n--b0undary--\r\n"
	default:
		h.Set("Content-Type", "text/plain")
		body = v
	}
	var text strings.Builder
	fmt.Fprintf(&text, "POST %s HTTP/1.1\n", u.RequestURI())
	for k, vs := range h {
		for _, x := range vs {
			fmt.Fprintf(&text, "%s: %s\n", k, x)
		}
	}
	text.WriteString("\n" + body)
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := &Request{URL: u, Header: h}
	if rd != nil {
		req.Body = rd
	}
	// gitleaks reads the query percent-decoded, as we do.
	t := text.String()
	if place == "query" || place == "form" {
		if d, err := url.QueryUnescape(t); err == nil {
			t = d
		}
	}
	_ = n
	return req, t
}
