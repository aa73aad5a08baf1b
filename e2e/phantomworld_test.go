package e2e

import (
	"context"
	"crypto/subtle"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// phantomPolicy binds one credential to git.example.test (basic auth, as git
// sends it); other.example.test is allowed but not bound.
const phantomPolicy = `
version: 1
listen:
  proxy: 192.0.2.1:3128
  admin: 127.0.0.1:18080
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
  hosts:
    git.example.test: 198.51.100.10
    other.example.test: 203.0.113.10
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: git.example.test
          - host: other.example.test
    credentials:
      - name: git
        secret_file: git.secret
        hosts: [git.example.test]
        inject: basic
        user: x-access-token
        env: [GITHUB_TOKEN]
        format: github-pat
`

// phantomEnv is a running gateway with a phantom credential in front of a git
// server that accepts only the real token, and another host that asks for one.
type phantomEnv struct {
	*fixture
	trust  string
	secret string // path of the real secret's file

	mu       sync.Mutex
	gitAuth  []string // Authorization headers the git server got
	otherHit int      // requests the other host got
	other    []string // Authorization headers the other host got
}

func (e *phantomEnv) real(t *testing.T) string {
	b, err := os.ReadFile(e.secret)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func startPhantom(t *testing.T, real string) *phantomEnv {
	e := &phantomEnv{fixture: newFixture(t, phantomPolicy, "acme")}
	e.secret = filepath.Join(e.dir, "git.secret")
	mustWrite(t, e.secret, real+"\n", 0o600)
	repos := t.TempDir()
	testnet.MakeBareRepo(t, repos, "demo")
	git := testnet.GitHandler(t, repos)
	// The git server wants the real token as the basic-auth password; it
	// reads the file on every request, so that rotation shows.
	e.w.ServeUpstream(t, testnet.HostPort(apiAddr, 443), e.upCA.ServerTLS(t, "git.example.test"),
		http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			e.mu.Lock()
			e.gitAuth = append(e.gitAuth, r.Header.Get("Authorization"))
			e.mu.Unlock()
			b, _ := os.ReadFile(e.secret)
			_, pass, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(pass), []byte(strings.TrimSpace(string(b)))) != 1 {
				rw.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(rw, "authentication required", http.StatusUnauthorized)
				return
			}
			git.ServeHTTP(rw, r)
		}))
	e.w.ServeUpstream(t, testnet.HostPort(otherAddr, 443), e.upCA.ServerTLS(t, "other.example.test"),
		http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			e.mu.Lock()
			e.otherHit++
			e.other = append(e.other, r.Header.Get("Authorization"))
			e.mu.Unlock()
			rw.Header().Set("WWW-Authenticate", `Basic realm="other"`)
			http.Error(rw, "authentication required", http.StatusUnauthorized)
		}))
	e.serve(t, "2s")
	e.trust = e.exportTrust(t, "acme")
	return e
}

// envLines are the exported sluice.env lines.
func (e *phantomEnv) envLines(t *testing.T) []string { return envLines(t, e.trust) }

// git runs git in the sandbox with the exported env and a credential helper
// that hands out $GITHUB_TOKEN, as a platform would configure it.
func (e *phantomEnv) git(t *testing.T, dir string, args ...string) (string, error) {
	full := append([]string{"-c", "credential.helper=",
		"-c", `credential.helper=!f() { echo username=x-access-token; echo "password=$GITHUB_TOKEN"; }; f`}, args...)
	cmd := e.w.Sandbox.Command(context.Background(), "git", full...)
	cmd.Dir = dir
	cmd.Env = append(testnet.GitEnv(t), e.envLines(t)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// curl runs curl in the sandbox with the exported env; it returns the HTTP
// code and the Sluice-Reason seen.
func (e *phantomEnv) curl(t *testing.T, args ...string) (code, reason string) {
	code, _, reason, _ = e.sandboxCurl(t, e.envLines(t), args...)
	return code, reason
}
