package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheckRefusesUnreachableUpstreams(t *testing.T) {
	t.Setenv("SLUICE_TEST_CC_TOKEN", "a-test-token-that-is-long-enough")
	write := func(hosts string) string {
		dir := t.TempDir()
		p := filepath.Join(dir, "sluice.yaml")
		os.WriteFile(p, []byte("data_dir: data\nupstream:\n  hosts:\n"+hosts+
			"tenants:\n  acme:\n    token_env: SLUICE_TEST_CC_TOKEN\n    classes: {agent: {allow: [{host: internal.example.test}]}}\n"), 0o600)
		return p
	}
	for _, tc := range []struct{ hosts, want string }{
		{"    internal.example.test: 127.0.0.1\n", "sluice.yaml:4: upstream.hosts.internal.example.test: maps internal.example.test to 127.0.0.1: the gateway refuses to dial it (loopback)"},
		{"    internal.example.test: \"::ffff:127.0.0.2\"\n", "(loopback)"},
		{"    internal.example.test: 169.254.169.254\n", "(cloud metadata)"},
		{"    internal.example.test: 0.0.0.0\n", "refuses to dial it"},
	} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), []string{"config", "check", "--config", write(tc.hosts)}, &out, &errb); code != 1 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%s: exit %d: %s", strings.TrimSpace(tc.hosts), code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"config", "check", "--config", write("    internal.example.test: 192.0.2.7\n")}, &out, &errb); code != 0 {
		t.Errorf("a routable mapping: exit %d: %s", code, errb.String())
	}
}
