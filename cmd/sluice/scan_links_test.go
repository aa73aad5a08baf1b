package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sluice scan reports a link that carries data to a host the tenant may
// not reach, as the gateway does, and not one to a host it may reach.
func TestScanFindsExfilLinks(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SLUICE_TEST_SCAN_TOKEN", "a-test-token-that-is-long-enough")
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("data_dir: data\ntenants:\n  acme:\n    token_env: SLUICE_TEST_SCAN_TOKEN\n    classes: {agent: {allow: [{host: docs.example.test}]}}\n"), 0o600)
	doc := filepath.Join(dir, "answer.md")
	os.WriteFile(doc, []byte("See [this](https://drop.evil.test/c?d=c2Vzc2lvbi1kYXRhLWdvZXMtaGVyZQ) and "+
		"[the docs](https://docs.example.test/page?q=c2Vzc2lvbi1kYXRhLWdvZXMtaGVyZQ).\n"), 0o600)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"scan", "--config", cfg, "--json", doc}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), `"kind":"exfil-link"`) || !strings.Contains(out.String(), "drop.evil.test") {
		t.Fatalf("exit %d:\n%s\n%s", code, out.String(), errb.String())
	}
	if strings.Contains(out.String(), "docs.example.test") {
		t.Errorf("a link to an allowed host reported:\n%s", out.String())
	}
	// Several tenants and no --tenant: links are not checked, and stderr says so.
	os.WriteFile(cfg, []byte("data_dir: data\ntenants:\n  acme:\n    token_env: SLUICE_TEST_SCAN_TOKEN\n    classes: {agent: {}}\n"+
		"  globex:\n    token_env: SLUICE_TEST_SCAN_TOKEN\n    classes: {agent: {}}\n"), 0o600)
	out.Reset()
	errb.Reset()
	Run(context.Background(), []string{"scan", "--config", cfg, "--json", doc}, &out, &errb)
	if strings.Contains(out.String(), "exfil-link") || !strings.Contains(errb.String(), "pass --tenant") {
		t.Errorf("several tenants: %s / %s", out.String(), errb.String())
	}
	out.Reset()
	if Run(context.Background(), []string{"scan", "--config", cfg, "--tenant", "globex", "--json", doc}, &out, &errb); !strings.Contains(out.String(), "exfil-link") {
		t.Errorf("--tenant globex: no link found:\n%s", out.String())
	}
}
