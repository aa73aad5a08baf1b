package phantom

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSecretsAndMintTenants(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "gh.secret")
	os.WriteFile(secret, []byte("real-"+strings.Repeat("r", 30)+"\n"), 0o600)
	good := &Credential{Name: "gh", Secret: &File{Path: secret}, Hosts: []string{"api.example.test"}, Env: []string{"GH_TOKEN"}}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	creds := map[string][]*Credential{"acme": {good}}
	if err := CheckSecrets(creds); err != nil {
		t.Fatal(err)
	}
	missing := &Credential{Name: "gone", Secret: &File{Path: filepath.Join(dir, "none")}, Hosts: []string{"api.example.test"}}
	err := CheckSecrets(map[string][]*Credential{"acme": {good, missing}})
	if err == nil || !strings.Contains(err.Error(), "credential gone") {
		t.Fatalf("an unreadable secret: %v", err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	reg := &Registry{Dir: dir, Key: key, Credentials: creds}
	if err := reg.MintTenants(creds); err != nil {
		t.Fatal(err)
	}
	env, err := reg.Mint("acme", "")
	if err != nil || len(env) != 1 || !strings.HasPrefix(env[0], "GH_TOKEN=") {
		t.Fatalf("the tenant's phantoms: %v, %v", env, err)
	}
	again, _ := reg.Mint("acme", "")
	if again[0] != env[0] {
		t.Fatal("MintTenants is not idempotent: the phantom changed")
	}
}
