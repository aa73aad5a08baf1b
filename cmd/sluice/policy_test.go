package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/store"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestPolicyCommands(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte(`
presets:
  hosts:
    npm_registry: [registry.npm.example.test]
tenants:
  acme:
    token_env: ACME_TOKEN_UNSET
    classes:
      agent:
        allow:
          - host: api.example.test
            methods: [GET]
        derive:
          presets: [npm, pypi]
`), 0o600)
	repo := filepath.Join(dir, "repo")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "requirements.txt"), []byte("--extra-index-url https://bot:do-not-put-secrets-here@pypi.corp.test/simple\nrequests\n"), 0o644)

	t.Run("presets", func(t *testing.T) {
		code, out, _ := runCLI(t, "policy", "presets")
		if code != 0 || !strings.Contains(out, "pypi@1") || !strings.Contains(out, "hosts from presets.hosts.npm_registry") {
			t.Fatalf("%d\n%s", code, out)
		}
	})
	t.Run("explain json", func(t *testing.T) {
		code, out, errs := runCLI(t, "policy", "explain", "--config", cfg, "--tenant", "acme", "--repo", repo, "--json")
		if code != 0 {
			t.Fatalf("%d %s", code, errs)
		}
		var got struct {
			Allow []struct {
				Host   string
				Origin struct{ Kind string }
			}
			Suggestions []struct{ Host, URL string }
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		kinds := map[string]string{}
		for _, a := range got.Allow {
			kinds[a.Host] = a.Origin.Kind
		}
		if kinds["api.example.test"] != "config" || kinds["pypi.org"] != "derived" || kinds["files.pythonhosted.org"] != "derived" {
			t.Errorf("allow = %+v", got.Allow)
		}
		if len(got.Suggestions) != 1 || got.Suggestions[0].Host != "pypi.corp.test" {
			t.Errorf("suggestions = %+v", got.Suggestions)
		}
		if strings.Contains(out, "do-not-put-secrets-here") || strings.Contains(out, "bot:") {
			t.Fatalf("explain prints a credential:\n%s", out)
		}
	})
	t.Run("check", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
			code int // a refusal exits 1
		}{
			{[]string{"https://api.example.test/x"}, "allow GET https://api.example.test:443/x", 0},
			{[]string{"--method", "POST", "https://api.example.test/x"}, "deny POST https://api.example.test:443/x: method-not-allowed", 1},
			{[]string{"https://pypi.org/simple/requests/", "--repo", repo}, "preset pypi@1 derived from requirements.txt", 0},
			{[]string{"https://pypi.org/simple/requests/"}, "deny GET", 1},
			{[]string{"https://pypi.corp.test/simple/", "--repo", repo}, "host-not-allowed", 1},
			{[]string{"https://pypi.corp.test/simple/", "--json"}, `"reason": "host-not-allowed"`, 1},
		} {
			code, out, errs := runCLI(t, append([]string{"policy", "check", "--config", cfg, "--tenant", "acme"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.want) || errs != "" {
				t.Errorf("%v: %d %q %s", tc.args, code, out, errs)
			}
		}
		if code, _, _ := runCLI(t, "policy", "check", "--tenant", "acme", "ftp://x.test/"); code != 2 {
			t.Errorf("ftp URL: exit %d", code)
		}
		if code, _, _ := runCLI(t, "policy", "explain", "--config", cfg, "--tenant", "nobody"); code != 1 {
			t.Errorf("unknown tenant: exit %d", code)
		}
	})
}

// An approved access request is part of the effective policy: explain and
// check show it, with the grant as its origin, until it expires.
func TestPolicyShowsStoredGrants(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("data_dir: data\ntenants:\n  acme:\n    token_env: ACME_TOKEN_UNSET\n    classes: {agent: {allow: []}}\n  globex:\n    token_env: GLOBEX_TOKEN_UNSET\n    classes: {agent: {allow: []}}\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "data"), 0o700)
	if code, out, _ := runCLI(t, "policy", "check", "--config", cfg, "--tenant", "acme", "https://granted.example.test/"); code == 0 && !strings.Contains(out, "deny") {
		t.Fatalf("before any grant: %d %s", code, out)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "data", store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	req, err := st.CreateAccessRequest(context.Background(), store.AccessRequest{Tenant: "acme", Host: "granted.example.test",
		Justification: "docs", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DecideAccessRequest(context.Background(), req.ID, store.AccessDecision{Approve: true, Reviewer: "rev", Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	code, out, errs := runCLI(t, "policy", "explain", "--config", cfg, "--tenant", "acme")
	if code != 0 || !strings.Contains(out, "granted.example.test") || !strings.Contains(out, req.ID) {
		t.Fatalf("explain does not show the grant %s: %d %s %s", req.ID, code, out, errs)
	}
	if _, out, _ := runCLI(t, "policy", "explain", "--config", cfg, "--tenant", "globex"); strings.Contains(out, "granted.example.test") {
		t.Fatalf("acme's grant shows in globex's policy:\n%s", out)
	}
}

// policy check --run answers for a stored run: its own entries count, and
// exit 1 says no for what the run may not reach.
func TestPolicyCheckForARun(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("data_dir: data\ntenants:\n  acme:\n    token_env: ACME_TOKEN_UNSET\n    classes: {agent: {allow: [{host: base.example.test}], run_extras: [extra.example.test]}}\n"+
		"  globex:\n    token_env: GLOBEX_TOKEN_UNSET\n    classes: {agent: {allow: []}}\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "data"), 0o700)
	st, err := store.Open(context.Background(), filepath.Join(dir, "data", store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRun(context.Background(), store.Run{ID: "run_01PC", Tenant: "acme", Class: "agent", TokenHash: strings.Repeat("ab", 32),
		Extra: []byte(`[{"host":"extra.example.test","methods":["GET"]}]`)}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--run", "run_01PC", "https://extra.example.test/x"}, 0, "allow GET"},
		{[]string{"--run", "run_01PC", "https://base.example.test/x"}, 0, "allow GET"},
		{[]string{"--run", "run_01PC", "--method", "POST", "https://extra.example.test/x"}, 1, "deny POST"},
		{[]string{"--tenant", "acme", "https://extra.example.test/x"}, 1, "host-not-allowed"},
		{[]string{"--run", "run_01PC", "--tenant", "globex", "https://extra.example.test/x"}, 1, "belongs to tenant acme"},
		{[]string{"--run", "run_nope", "https://extra.example.test/x"}, 1, "not found"},
	} {
		code, out, errs := runCLI(t, append([]string{"policy", "check", "--config", cfg}, tc.args...)...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%v: exit %d %q %q", tc.args, code, out, errs)
		}
	}
	if code, out, _ := runCLI(t, "policy", "explain", "--config", cfg, "--run", "run_01PC"); code != 0 || !strings.Contains(out, "extra.example.test") {
		t.Errorf("explain --run: %d %s", code, out)
	}
}
