package e2e

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
	w      *testnet.World
	dir    string
	cfg    string
	trust  string
	secret string // path of the real secret's file
	stderr *syncBuffer

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
	w := testnet.New(t)
	e := &phantomEnv{w: w, dir: t.TempDir()}
	e.secret = filepath.Join(e.dir, "git.secret")
	mustWrite(t, e.secret, real+"\n", 0o600)
	upCA := testnet.NewTestCA(t, "internet")
	repos := t.TempDir()
	testnet.MakeBareRepo(t, repos, "demo")
	git := testnet.GitHandler(t, repos)
	// The git server wants the real token as the basic-auth password; it
	// reads the file on every request, so that rotation shows.
	w.ServeUpstream(t, testnet.HostPort(apiAddr, 443), upCA.ServerTLS(t, "git.example.test"),
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
	w.ServeUpstream(t, testnet.HostPort(otherAddr, 443), upCA.ServerTLS(t, "other.example.test"),
		http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			e.mu.Lock()
			e.otherHit++
			e.other = append(e.other, r.Header.Get("Authorization"))
			e.mu.Unlock()
			rw.Header().Set("WWW-Authenticate", `Basic realm="other"`)
			http.Error(rw, "authentication required", http.StatusUnauthorized)
		}))
	mustWrite(t, filepath.Join(e.dir, "acme.token"), randomToken(t)+"\n", 0o600)
	upCA.WritePEM(t, e.dir)
	os.Rename(filepath.Join(e.dir, "internet-ca.pem"), filepath.Join(e.dir, "upstream-ca.pem"))
	e.cfg = filepath.Join(e.dir, "sluice.yaml")
	mustWrite(t, e.cfg, phantomPolicy, 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gw := w.Gateway.Command(ctx, sluiceBin, "serve", "--config", e.cfg, "--drain-timeout", "2s")
	stdout, err := gw.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	e.stderr = &syncBuffer{}
	gw.Stderr = e.stderr
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "proxy on") {
				once = true
				close(ready)
			}
		}
		exited <- gw.Wait()
	}()
	t.Cleanup(func() {
		if gw.ProcessState == nil {
			gw.Process.Kill()
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", e.stderr.String())
		}
	})
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("gateway exited at start: %v\n%s", err, e.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("gateway did not start\n%s", e.stderr.String())
	}
	e.trust = filepath.Join(e.dir, "trust")
	if _, err := w.Gateway.Run(t, sluiceBin, "ca", "export", "--config", e.cfg, "--tenant", "acme", "--out", e.trust); err != nil {
		t.Fatalf("ca export: %v", err)
	}
	return e
}

// envLines are the exported sluice.env lines.
func (e *phantomEnv) envLines(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(e.trust, "sluice.env"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

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
	full := append([]string{"-sS", "-v", "--max-time", "15", "-o", "/dev/null", "-w", "%{http_code}"}, args...)
	cmd := e.w.Sandbox.Command(context.Background(), "curl", full...)
	cmd.Env = append(testnet.GitEnv(t), e.envLines(t)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	for _, l := range strings.Split(stderr.String(), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "< "), ":"); ok && strings.EqualFold(k, "Sluice-Reason") {
			reason = strings.TrimSpace(v)
		}
	}
	return strings.TrimSpace(string(out)), reason
}

// phantomBasic is the Authorization header git sends for user and pass.
func phantomBasic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}
