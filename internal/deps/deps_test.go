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
	"gateway":       {"store", "dashboard", "alert", "cmd/sluice", "ca"},
	"gateway/guard": {"rules", "scanner", "store", "dashboard", "gateway"},
	"ca":            {"rules", "gateway", "store", "dashboard", "scanner"},
	"rules":         {"gateway", "store", "dashboard", "scanner", "ca"},
	"scanner":       {"gateway", "store", "dashboard", "ca"},
	"phantom":       {"gateway", "store", "dashboard"},
	"store":         {"gateway", "dashboard", "rules", "scanner", "ca"},
	"dashboard":     {"gateway", "scanner", "ca", "cmd/sluice"},
	"alert":         {"gateway", "store", "dashboard"},
}

// leaves lists the project packages that import no other project package.
var leaves = []string{"incident"}

func TestDeps(t *testing.T) {
	for pkg, bad := range forbidden {
		deps := map[string]bool{}
		for _, d := range depsOf(t, pkg) {
			deps[strings.TrimPrefix(d, module)] = true
		}
		for _, b := range bad {
			if deps[b] {
				t.Errorf("%s depends on %s: DESIGN.md's dependencies point the other way", pkg, b)
			}
		}
	}
	for _, pkg := range leaves {
		for _, d := range depsOf(t, pkg) {
			if strings.HasPrefix(d, module) && d != module+pkg {
				t.Errorf("%s depends on %s: it must import nothing of ours", pkg, strings.TrimPrefix(d, module))
			}
		}
	}
}

// depsOf lists pkg and the packages it depends on, directly or not.
func depsOf(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../../"+pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}
