package e2e

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPhantomCredentials: the sandbox holds a phantom; git clone and push
// work against a server that accepts only the real token; the phantom sent
// elsewhere is refused with an incident; the real secret is nowhere the
// sandbox or the gateway's records can show it; rotation needs no restart.
func TestPhantomCredentials(t *testing.T) {
	real := fake(t, "github-pat")
	e := startPhantom(t, real)
	var phantom string
	for _, l := range e.envLines(t) {
		if v, ok := strings.CutPrefix(l, "GITHUB_TOKEN="); ok {
			phantom = v
		}
	}
	if !strings.HasPrefix(phantom, "ghp_") || len(phantom) != len(real) || phantom == real {
		t.Fatalf("sluice.env: GITHUB_TOKEN is not a phantom in the token's shape")
	}
	work := t.TempDir()

	t.Run("clone and push with the phantom", func(t *testing.T) {
		if out, err := e.git(t, work, "clone", "https://git.example.test/demo.git", "demo"); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		repo := filepath.Join(work, "demo")
		os.WriteFile(filepath.Join(repo, "change.txt"), []byte("from the sandbox\n"), 0o644)
		for _, args := range [][]string{{"add", "change.txt"}, {"commit", "-q", "-m", "sandbox change"}, {"push", "-q", "origin", "main"}} {
			if out, err := e.git(t, repo, args...); err != nil {
				t.Fatalf("git %s: %v\n%s", args[0], err, out)
			}
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		sawReal := false
		for _, a := range e.gitAuth {
			if strings.Contains(a, "Basic ") {
				if a != "Basic "+basicAuth("x-access-token", real) {
					t.Errorf("the git server got credentials other than the real token")
				}
				sawReal = true
			}
		}
		if !sawReal {
			t.Error("the git server never got the real token")
		}
	})

	t.Run("the phantom to another host is refused with an incident", func(t *testing.T) {
		out, err := e.git(t, work, "ls-remote", "https://other.example.test/demo.git")
		if err == nil {
			t.Fatalf("git ls-remote to another host succeeded:\n%s", out)
		}
		e.mu.Lock()
		for _, a := range e.other {
			if a != "" {
				t.Errorf("the other host got credentials")
			}
		}
		e.mu.Unlock()
		if !e.logged("rule=phantom-misuse:git") || !strings.Contains(e.log(), "incident=") {
			t.Errorf("no phantom-misuse incident in the log")
		}
		code, reason := e.curl(t, "-u", "x-access-token:"+phantom, "https://other.example.test/x")
		if code != "403" || reason != "phantom-misuse" {
			t.Errorf("curl with the phantom to another host: %s %q", code, reason)
		}
		code, reason = e.curl(t, "-u", "x-access-token:"+phantom, "-d", "token="+phantom, "https://git.example.test/demo.git/x")
		if code != "403" || reason != "phantom-misuse" {
			t.Errorf("phantom in the body of its own host: %s %q", code, reason)
		}
	})

	t.Run("rotation takes effect without restarting anything", func(t *testing.T) {
		rotated := fake(t, "github-pat")
		mustWrite(t, e.secret, rotated+"\n", 0o600)
		future := time.Now().Add(5 * time.Second)
		os.Chtimes(e.secret, future, future)
		time.Sleep(1100 * time.Millisecond) // the file is looked at once a second at most
		if out, err := e.git(t, work, "ls-remote", "https://git.example.test/demo.git"); err != nil {
			t.Fatalf("git ls-remote after rotation: %v\n%s", err, out)
		}
		e.mu.Lock()
		last := e.gitAuth[len(e.gitAuth)-1]
		e.mu.Unlock()
		if last != "Basic "+basicAuth("x-access-token", rotated) {
			t.Error("the git server did not get the rotated token")
		}
	})

	t.Run("the real secrets are nowhere to be read", func(t *testing.T) {
		secrets := []string{real, e.real(t)}
		check := func(what string, data []byte) {
			for _, s := range secrets {
				for _, form := range []string{s, basicAuth("x-access-token", s)} {
					if strings.Contains(string(data), form) {
						t.Errorf("%s holds a real secret", what)
					}
				}
			}
		}
		// The sandbox's files: the export and the clone.
		for _, root := range []string{e.trust, work, filepath.Join(e.dir, "data")} {
			filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					b, _ := os.ReadFile(path)
					check(path, b)
				}
				return nil
			})
		}
		for _, l := range e.envLines(t) {
			check("sluice.env", []byte(l))
		}
		if _, err := os.Stat(filepath.Join(e.dir, "data", "sluice.db")); err != nil {
			t.Errorf("no database to check: %v", err)
		}
		check("gateway log", []byte(e.log()))
		c := e.w.Gateway.HTTPClient(nil, nil)
		for _, p := range []string{"/metrics", "/", "/incidents", "/api/incidents"} {
			resp, err := c.Get("http://127.0.0.1:18080" + p)
			if err != nil {
				t.Errorf("admin %s: %v", p, err)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			check("admin "+p, b)
			if p == "/metrics" && !strings.Contains(string(b), "phantom") {
				t.Logf("metrics do not name the phantom-misuse rule")
			}
		}
	})
}
