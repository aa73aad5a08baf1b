package derive

import (
	"testing"
	"testing/fstest"
)

func TestPHP(t *testing.T) {
	runCases(t, []deriveCase{
		{
			name: "vcs and composer repositories", dir: "php",
			presets: map[string][]string{"packagist": {"composer.json"}},
			suggest: []string{"git.example.test:443 composer repository (vcs)", "satis.corp.test:443 composer repository (composer)"},
			sources: []string{"satis.corp.test composer.json:10"},
		},
		{
			name: "repositories as an object, a git remote over ssh, the lock",
			files: fstest.MapFS{
				"composer.json": {Data: []byte(`{"repositories": {"b": {"type": "git", "url": "git@git.corp.test:b/b.git"}, "a": {"type": "composer", "url": "https://a.corp.test"}}}`)},
				"composer.lock": {Data: []byte(`{"packages": [{"dist": {"url": "https://lock.example.test/x.zip"}}]}`)},
			},
			presets: map[string][]string{"packagist": {"composer.json", "composer.lock"}},
			suggest: []string{"git.corp.test:443 composer repository (git) (over ssh: the gateway carries https only)", "a.corp.test:443 composer repository (composer)"},
			never:   []string{"lock.example.test"}, // the lock only selects
		},
	})
}

func FuzzPHP(f *testing.F) {
	fuzzManifests(f, []string{"composer.json", "composer.lock"},
		`{"repositories":[{"type":"vcs","url":"git@h.test:a/b.git"},{"type":"composer","url":"https://c.test"}]}`,
		`{"repositories":{"x":{"type":"path","url":"../x"}}}`,
	)
}
