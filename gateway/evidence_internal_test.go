package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/scanner"
)

// panickyScanner breaks on every path and host it is asked to read.
type panickyScanner struct{}

func (panickyScanner) Scan(context.Context, *scanner.Request) (*scanner.Result, error) {
	panic("scanner bug")
}
func (panickyScanner) SafePath(context.Context, string, string) string { panic("scanner bug") }
func (panickyScanner) ScanHost(context.Context, string, string, int) (*scanner.Result, error) {
	panic("scanner bug")
}

// A scanner that panics while a refusal's path or host is read leaves
// neither in the record: no path, and the host's labels masked.
func TestEvidenceSurvivesAPanickingScanner(t *testing.T) {
	g := &Gateway{Scanner: panickyScanner{}}
	tok := "ghp_" + strings.Repeat("q", 36)
	if got := g.evidencePath(context.Background(), "acme", "/repos/"+tok); got != "/{redacted}" {
		t.Errorf("evidencePath = %q, want /{redacted}", got)
	}
	if got := g.evidenceHost(context.Background(), "acme", "ghp-"+strings.Repeat("q", 36)+".evil.test"); got != "{redacted}.evil.test" {
		t.Errorf("evidenceHost = %q, want {redacted}.evil.test", got)
	}
}
