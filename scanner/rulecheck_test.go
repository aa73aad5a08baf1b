package scanner

import (
	"strings"
	"testing"
)

// TestLoadRulesBadRegex: a pack whose regex the engine refuses is an error
// naming the pack and the rule, not a panic inside LoadRules.
func TestLoadRulesBadRegex(t *testing.T) {
	for name, tc := range map[string]struct{ pack, want string }{
		"rule regex": {`[[rules]]
id = "broken-rule"
regex = '''abc(def'''
keywords = ["abc"]
`, `rule "broken-rule"`},
		"rule allowlist": {`[[rules]]
id = "fine-rule"
regex = '''abcdef[0-9]{8}'''
keywords = ["abcdef"]
[[rules.allowlists]]
regexes = ['''x[''']
`, `rule "fine-rule": allowlist`},
		"global allowlist": {`[[allowlists]]
regexes = ['''(?P<x''']
`, `allowlist "(?P<x"`},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("LoadRules panicked: %v", p)
					}
				}()
				_, err = LoadRules(Pack{Name: "bad.toml", Data: []byte(tc.pack)})
			}()
			if err == nil {
				t.Fatal("LoadRules took a pack with a bad regex")
			}
			if !strings.Contains(err.Error(), "pack bad.toml") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name the pack and %s", err, tc.want)
			}
		})
	}
}
