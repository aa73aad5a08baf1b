package derive

import (
	"testing"
	"testing/fstest"
)

func TestGo(t *testing.T) {
	runCases(t, []deriveCase{
		{name: "module with a Makefile proxy", dir: "go-make", presets: map[string][]string{"go": {"go.mod"}}, suggest: []string{"goproxy.corp.test:443 GOPROXY"}},
		{
			name: "monorepo: dependencies and vendored code are not walked", dir: "monorepo",
			presets: map[string][]string{"go": {"services/api/go.mod"}},
			never:   []string{"evil.example.test"},
		},
		{
			name:    "a workspace; go.mod names no hosts",
			files:   fstest.MapFS{"go.work": {Data: []byte("go 1.22\nuse ./a\n")}, "a/go.mod": {Data: []byte("module x\nreplace y => https://r.example.test/y v1\n")}},
			presets: map[string][]string{"go": {"a/go.mod", "go.work"}},
			never:   []string{"r.example.test"},
		},
	})
}

func FuzzGo(f *testing.F) {
	fuzzManifests(f, []string{"go.mod", "go.work"}, "module example.test/x\n\ngo 1.22\n")
}
