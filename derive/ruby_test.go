package derive

import (
	"testing"
	"testing/fstest"
)

func TestRuby(t *testing.T) {
	runCases(t, []deriveCase{
		{
			name: "sources and git gems", dir: "ruby",
			presets: map[string][]string{"rubygems": {"Gemfile"}},
			suggest: []string{"gems.corp.test:443 Gemfile source", "git.example.test:443 git gem", "github.com:443 git gem"},
			sources: []string{"gems.corp.test Gemfile:2", "github.com Gemfile:8"},
		},
		{
			name: "lockfile remotes and a gemspec",
			files: fstest.MapFS{
				"Gemfile.lock": {Data: []byte("GIT\n  remote: https://git.lock.test/x.git\n  revision: abc\n\nGEM\n  remote: https://gems.lock.test/\n")},
				"x.gemspec":    {Data: []byte("Gem::Specification.new do |s|\n  s.homepage = \"https://home.example.test\"\nend\n")},
			},
			presets: map[string][]string{"rubygems": {"Gemfile.lock", "x.gemspec"}},
			suggest: []string{"git.lock.test:443 Gemfile.lock remote", "gems.lock.test:443 Gemfile.lock remote"},
			never:   []string{"home.example.test"},
		},
		{
			name:    "hash-rocket and block git sources",
			files:   fstest.MapFS{"gems.rb": {Data: []byte("gem 'a', :git => 'git@git.corp.test:a/a.git'\ngit 'https://block.example.test/b.git' do\nend\n")}},
			presets: map[string][]string{"rubygems": {"gems.rb"}},
			suggest: []string{"git.corp.test:443 git gem (over ssh: the gateway carries https only)", "block.example.test:443 git gem"},
		},
	})
}

func FuzzRuby(f *testing.F) {
	fuzzManifests(f, []string{"Gemfile", "Gemfile.lock", "x.gemspec"},
		"source 'https://g.test'\ngem 'a', git: 'git@h.test:a/a.git'\ngem 'b', github: 'o/b'\n",
		"GEM\n  remote: https://g.test/\n",
	)
}
