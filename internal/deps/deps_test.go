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
	// The sandboxes' resolver declares what it needs; cmd plugs rules, scanner and the
	// store in.
	"sandboxdns": {"rules", "gateway", "scanner", "store", "dashboard", "ca", "phantom", "alert", "cmd/sluice", "config", "runs"},
}

func TestDeps(t *testing.T) {
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[strings.TrimPrefix(d, module)] = true
		}
		for _, b := range bad {
			if deps[b] {
				t.Errorf("%s depends on %s: DESIGN.md's dependencies point the other way", pkg, b)
			}
		}
	}
}
