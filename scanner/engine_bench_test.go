package scanner

import (
	"math/rand/v2"
	stdregexp "regexp"
	"strconv"
	"strings"
	"testing"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
)

// BenchmarkRuleRegex compares Go's regexp and gitleaks' compiled regex
// (go-re2 under the gore2regex tag) on windows of several sizes of the
// bench bodies, for the rules woken most often: it sets smallText.
func BenchmarkRuleRegex(b *testing.B) {
	rs, err := DefaultRules()
	if err != nil {
		b.Fatal(err)
	}
	bodies := benchBodies()
	for _, id := range []string{"generic-api-key", "jwt", "vault-service-token"} {
		var er *engineRule
		for i := range rs.eng.rules {
			if rs.eng.rules[i].cfg.RuleID == id {
				er = &rs.eng.rules[i]
			}
		}
		std := stdregexp.MustCompile(er.cfg.Regex.String())
		for _, body := range []string{"code", "dense"} {
			text := string(bodies[body][:256<<10])
			for _, w := range []int{24, 64, 300, 4096} {
				for _, e := range []struct {
					name string
					m    matcher
				}{{"std", std}, {"gitleaks", er.cfg.Regex}} {
					b.Run(id+"/"+body+"/"+e.name+"/"+strconv.Itoa(w), func(b *testing.B) {
						b.SetBytes(int64(len(text)))
						for b.Loop() {
							for i := 0; i+w <= len(text); i += w {
								e.m.FindAllStringIndex(text[i:i+w], -1)
							}
						}
					})
				}
			}
		}
	}
}

// BenchmarkKeywordSet is the automaton pass alone, ours against
// BobuSumisu/aho-corasick (gitleaks' prefilter, on a lowercased copy as
// gitleaks uses it) over the same keywords.
func BenchmarkKeywordSet(b *testing.B) {
	rs, err := DefaultRules()
	if err != nil {
		b.Fatal(err)
	}
	var kws []string
	for k := range rs.cfg.Keywords {
		kws = append(kws, k)
	}
	trie := ahocorasick.NewTrieBuilder().AddStrings(kws).Build()
	bodies := benchBodies()
	for _, name := range []string{"json", "code", "nokw"} {
		text := string(bodies[name])
		b.Run(name+"/ours", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			n := 0
			cpu := cpuTime()
			for b.Loop() {
				rs.eng.kw.each(text, func(int, int) { n++ })
			}
			reportCPU(b, cpuTime()-cpu, len(text))
		})
		// The same text in pieces of a chat message's length, as a JSON
		// body's segments come.
		var pieces []string
		for rest, r := text, rand.New(rand.NewPCG(1, 2)); len(rest) > 0; {
			n := min(200+r.IntN(1800), len(rest))
			pieces, rest = append(pieces, rest[:n]), rest[n:]
		}
		b.Run(name+"/ours-pieces", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			n := 0
			cpu := cpuTime()
			for b.Loop() {
				for _, p := range pieces {
					rs.eng.kw.each(p, func(int, int) { n++ })
				}
			}
			reportCPU(b, cpuTime()-cpu, len(text))
		})
		b.Run(name+"/bobusumisu", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			n := 0
			for b.Loop() {
				trie.Walk([]byte(strings.ToLower(text)), func(end, l, p int64) bool { n++; return true })
			}
		})
	}
}

// BenchmarkSubmatch compares the engines (and the engine's choice, with
// its short-match variants) on what check does per match:
// the secret group of a match string.
func BenchmarkSubmatch(b *testing.B) {
	rs, err := DefaultRules()
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{"generic-api-key", "github-pat"} {
		var er *engineRule
		for i := range rs.eng.rules {
			if rs.eng.rules[i].cfg.RuleID == id {
				er = &rs.eng.rules[i]
			}
		}
		m := `api_key = "` + randomString(base62, 32) + `"`
		if id == "github-pat" {
			m = "ghp_" + randomString(base62, 36)
		}
		b.Run(id+"/std", func(b *testing.B) {
			for b.Loop() {
				er.small.FindStringSubmatch(m)
			}
		})
		b.Run(id+"/engine", func(b *testing.B) {
			for b.Loop() {
				er.submatch(m)
			}
		})
		b.Run(id+"/gitleaks", func(b *testing.B) {
			for b.Loop() {
				er.re.FindStringSubmatch(m)
			}
		})
	}
}
