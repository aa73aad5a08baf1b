// Package deps holds the test that keeps the packages' dependencies pointing
// one way, as DESIGN.md draws them.
package deps

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sluice-egress/sluice/"

// layers orders every package of the module, bottom first. A package may depend
// (directly or through another package) only on packages of lower layers: nothing
// upward, nothing sideways. A new package takes its place here.
var layers = [][]string{
	// Leaves: they import nothing of ours.
	{"incident", "rules/match", "rules/presets", "rules/packs", "internal/fileutil", "internal/reload",
		"internal/testnet", "gateway/guard", "sandboxdns", "internal/probetag", "internal/pgtest", "internal/stepcatest"},
	// The domain and the adapters of one technology each.
	{"rules", "scanner", "ca", "store", "alert", "doctor"},
	// What builds on the policy model and the scanner.
	{"config", "derive", "phantom", "ca/stepca"},
	// The hot path, and the service in the middle.
	{"gateway", "runs", "internal/explain", "internal/credentials"},
	// The service's store adapter.
	{"internal/runstore"},
	// What serves or calls the service.
	{"dashboard", "internal/apiclient", "internal/desk", "internal/database", "internal/trust", "internal/gatewayconf", "internal/replica", "internal/incidentsink",
		"internal/sandboxnet", "internal/ops"},
	// What hands the config to the dashboard and the alert sink.
	{"internal/operatorconf"},
	// Wiring.
	{"cmd/sluice", "internal/benchharness/bench"},
	{"internal/benchharness"},
}

// forbidden lists, per package, the lower packages it must never import either,
// directly or through another package (DESIGN.md's "must not" column).
var forbidden = map[string][]string{
	"gateway":            {"store", "dashboard", "alert", "cmd/sluice", "ca", "config"},
	"gateway/guard":      {"rules", "scanner", "store", "dashboard", "gateway"},
	"ca":                 {"rules", "gateway", "store", "dashboard", "scanner"},
	"rules":              {"gateway", "store", "dashboard", "scanner", "ca", "config", "derive"},
	"config":             {"gateway", "store", "dashboard", "alert", "ca", "phantom", "cmd/sluice"},
	"derive":             {"gateway", "store", "dashboard", "scanner", "ca"},
	"scanner":            {"gateway", "store", "dashboard", "ca"},
	"phantom":            {"gateway", "store", "dashboard", "config"},
	"store":              {"gateway", "dashboard", "rules", "scanner", "ca"},
	"dashboard":          {"gateway", "scanner", "ca", "phantom", "config", "cmd/sluice"},
	"alert":              {"gateway", "store", "dashboard"},
	"doctor":             {"gateway", "rules", "scanner", "ca", "phantom", "store", "dashboard", "runs", "cmd/sluice"},
	"runs":               {"store", "dashboard", "gateway", "cmd/sluice", "scanner", "ca", "config"},
	"internal/runstore":  {"gateway", "dashboard", "scanner", "ca", "config"},
	"internal/apiclient": {"gateway", "store", "dashboard", "runs", "config", "rules"},
	"internal/reload":    {"rules", "config"},
	// The replicas' agreement and the incident sink take small interfaces: cmd plugs
	// the store, the runs service and the metrics in.
	"internal/replica":      {"config", "dashboard", "runs", "cmd/sluice"},
	"internal/incidentsink": {"store", "dashboard", "config", "runs", "cmd/sluice"},
	"internal/sandboxnet":   {"store", "dashboard", "config", "cmd/sluice"},
	"internal/ops":          {"gateway", "dashboard", "config", "runs", "cmd/sluice"},
	"internal/explain":      {"gateway", "store", "dashboard", "config", "cmd/sluice"},
	"internal/credentials":  {"gateway", "store", "dashboard", "runs", "cmd/sluice"},
	"internal/database":     {"gateway", "dashboard", "ca", "cmd/sluice"},
	"internal/trust":        {"gateway", "store", "dashboard", "runs", "cmd/sluice"},
	"internal/gatewayconf":  {"store", "dashboard", "runs", "cmd/sluice"},
	"internal/operatorconf": {"gateway", "cmd/sluice"},
	// The sandboxes' resolver declares what it needs; cmd plugs rules, scanner and the
	// store in.
	"sandboxdns": {"rules", "gateway", "scanner", "store", "dashboard", "ca", "phantom", "alert", "cmd/sluice", "config", "runs"},
}

func TestDeps(t *testing.T) {
	level := map[string]int{}
	for i, layer := range layers {
		for _, pkg := range layer {
			level[pkg] = i
		}
	}
	for pkg, bad := range forbidden {
		if _, ok := level[pkg]; !ok {
			t.Errorf("%s has a forbidden list but no layer", pkg)
		}
		deps := depsOf(t, pkg)
		for _, b := range bad {
			if deps[b] {
				t.Errorf("%s depends on %s: DESIGN.md's dependencies point the other way", pkg, b)
			}
		}
	}
	for pkg, l := range level {
		for d := range depsOf(t, pkg) {
			dl, ok := level[d]
			switch {
			case d == pkg:
			case !ok:
				t.Errorf("%s depends on %s, which has no layer", pkg, d)
			case dl >= l:
				t.Errorf("%s depends on %s: a package imports only from the layers below its own", pkg, d)
			}
		}
	}
}

// Every package of the module has its layer, so that its dependencies are checked.
func TestEveryPackageHasALayer(t *testing.T) {
	level := map[string]bool{}
	for _, layer := range layers {
		for _, pkg := range layer {
			level[pkg] = true
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{len .GoFiles}}", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, n, _ := strings.Cut(line, " ")
		pkg, ok := strings.CutPrefix(path, module)
		if !ok || n == "0" { // test-only packages (e2e, this one) and data without Go
			continue
		}
		if !level[pkg] {
			t.Errorf("package %s has no layer in deps_test.go: give it one", pkg)
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
