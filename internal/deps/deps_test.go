// Package deps holds the test that keeps the packages' dependencies pointing
// one way, as DESIGN.md draws them.
package deps

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sluice-egress/sluice/"

// forbidden lists, per package, the project packages it must never import,
// directly or through another package.
var forbidden = map[string][]string{
	"gateway":       {"store", "dashboard", "alert", "cmd/sluice", "ca", "config"},
	"gateway/guard": {"rules", "scanner", "store", "dashboard", "gateway"},
	"ca":            {"rules", "gateway", "store", "dashboard", "scanner"},
	"rules":         {"gateway", "store", "dashboard", "scanner", "ca", "config", "derive"},
	"config":        {"gateway", "store", "dashboard", "alert", "ca", "phantom", "cmd/sluice"},
	"derive":        {"gateway", "store", "dashboard", "scanner", "ca"},
	"scanner":       {"gateway", "store", "dashboard", "ca"},
	"phantom":       {"gateway", "store", "dashboard"},
	"store":         {"gateway", "dashboard", "rules", "scanner", "ca"},
	"dashboard":     {"gateway", "scanner", "ca", "cmd/sluice"},
	"alert":         {"gateway", "store", "dashboard"},
	"doctor":        {"gateway", "rules", "scanner", "ca", "phantom", "store", "dashboard", "runs", "cmd/sluice"},
	"runs":          {"store", "dashboard", "gateway", "cmd/sluice", "scanner", "ca"},
	// The sandboxes' resolver declares what it needs; cmd plugs rules, scanner and the
	// store in.
	"sandboxdns": {"rules", "gateway", "scanner", "store", "dashboard", "ca", "phantom", "alert", "cmd/sluice", "config", "runs"},
}

// leaves import no package of ours at all.
var leaves = []string{"incident", "rules/match"}

func TestDeps(t *testing.T) {
	for pkg, bad := range forbidden {
		deps := depsOf(t, pkg)
		for _, b := range bad {
			if deps[b] {
				t.Errorf("%s depends on %s: DESIGN.md's dependencies point the other way", pkg, b)
			}
		}
	}
	for _, pkg := range leaves {
		for d := range depsOf(t, pkg) {
			if d != pkg {
				t.Errorf("%s depends on %s: it is a leaf and imports nothing of ours", pkg, d)
			}
		}
	}
}

// depsOf returns the packages of ours that pkg depends on, directly or not (itself
// included), without the module prefix.
func depsOf(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../../"+pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	deps := map[string]bool{}
	for _, d := range strings.Fields(string(out)) {
		if ours, ok := strings.CutPrefix(d, module); ok {
			deps[ours] = true
		}
	}
	return deps
}
