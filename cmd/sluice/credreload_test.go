package main

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/credentials"
	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/rules"
)

// A reload that binds a credential to another host applies from the next
// request on, and a reload whose secret cannot be read is refused whole.
func TestReloadAppliesCredentials(t *testing.T) {
	dir := t.TempDir()
	tok, _ := rules.NewToken()
	os.WriteFile(filepath.Join(dir, "acme.token"), []byte(tok), 0o600)
	os.WriteFile(filepath.Join(dir, "gh.secret"), []byte("real-secret-value-for-tests-0000"), 0o600)
	write := func(host, secretFile string) string {
		p := filepath.Join(dir, "sluice.yaml")
		os.WriteFile(p, []byte(`version: 1
data_dir: data
tenants:
  acme:
    token_file: acme.token
    classes: {agent: {allow: [{host: `+host+`}]}}
    credentials:
      - {name: github, secret_file: `+secretFile+`, hosts: [`+host+`], env: [GITHUB_TOKEN], prefix: ghp_, length: 40}
`), 0o600)
		return p
	}
	cfgPath := write("api.one.example.test", "gh.secret")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	creds, err := credentials.FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := &phantom.Registry{Dir: t.TempDir(), Key: key, Credentials: creds}
	if err := reg.MintTenants(creds); err != nil {
		t.Fatal(err)
	}
	s := &Server{Config: cfg, phantoms: reg, Logger: slog.New(slog.DiscardHandler)}
	binds := func(host string) bool {
		for _, u := range reg.Uses("acme", "") {
			if u.Credential.Name == "github" && u.Binds(host, 443, "/") {
				return true
			}
		}
		return false
	}
	if !binds("api.one.example.test") || binds("api.two.example.test") {
		t.Fatal("start-up bindings wrong")
	}

	cfg2, err := config.Load(write("api.two.example.test", "gh.secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := credentials.Check(cfg2); err != nil {
		t.Fatal(err)
	}
	s.applyCredentials(cfg2)
	if binds("api.one.example.test") || !binds("api.two.example.test") {
		t.Fatal("reload did not move the credential's binding")
	}

	cfg3, err := config.Load(write("api.two.example.test", "missing-"+hex.EncodeToString(key[:4])))
	if err != nil {
		t.Fatal(err)
	}
	if err := credentials.Check(cfg3); err == nil {
		t.Fatal("a credential whose secret cannot be read passed the reload check")
	}
}
