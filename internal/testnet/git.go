package testnet

import (
	"context"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GitEnv returns the current environment without any GIT_* or proxy variables (an inherited
// GIT_SSL_CAINFO would override -c http.sslCAInfo), plus what makes git ignore the user's and
// the system's configuration: HOME is a fresh temporary directory. Use it as exec.Cmd.Env for
// git commands, including those run in a namespace with NS.Command.
func GitEnv(t testing.TB) []string {
	t.Helper()
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch lk := strings.ToLower(k); {
		case strings.HasPrefix(k, "GIT_"), lk == "http_proxy", lk == "https_proxy", lk == "all_proxy", lk == "no_proxy":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Sluice Test",
		"GIT_AUTHOR_EMAIL=test@sluice.test",
		"GIT_COMMITTER_NAME=Sluice Test",
		"GIT_COMMITTER_EMAIL=test@sluice.test",
	)
}

// git runs git with args in dir under GitEnv and fails the test on error.
func git(t testing.TB, env []string, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := run(cmd)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// GitHandler serves git's smart HTTP protocol (clone, fetch and push) for the bare
// repositories under root, through `git http-backend` as a CGI program. It enables push
// (http.receivepack) in every *.git repository under root when called; MakeBareRepo does the
// same for repositories created later.
func GitHandler(t testing.TB, root string) http.Handler {
	t.Helper()
	env := GitEnv(t)
	execPath := strings.TrimSpace(git(t, env, "", "--exec-path"))
	backend := filepath.Join(execPath, "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("testnet: git http-backend: %v", err)
	}
	repos, _ := filepath.Glob(filepath.Join(root, "*.git"))
	for _, r := range repos {
		git(t, env, r, "config", "http.receivepack", "true")
	}
	var cgiEnv []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "HOME" || strings.HasPrefix(k, "GIT_CONFIG") || k == "XDG_CONFIG_HOME" {
			cgiEnv = append(cgiEnv, kv)
		}
	}
	return &cgi.Handler{
		Path: backend,
		Dir:  root,
		Env: append(cgiEnv,
			"GIT_PROJECT_ROOT="+root,
			"GIT_HTTP_EXPORT_ALL=1",
		),
	}
}

// MakeBareRepo creates root/name.git with one commit on main holding README.md
// ("hello sluice"), push enabled for GitHandler.
func MakeBareRepo(t testing.TB, root, name string) {
	t.Helper()
	env := GitEnv(t)
	work := t.TempDir()
	git(t, env, work, "init", "-q", "-b", "main", ".")
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("hello sluice\n"), 0o644); err != nil {
		t.Fatalf("testnet: %v", err)
	}
	git(t, env, work, "add", "README.md")
	git(t, env, work, "-c", "user.name=Sluice Test", "-c", "user.email=test@sluice.test",
		"commit", "-q", "-m", "initial commit")
	bare := filepath.Join(root, name+".git")
	git(t, env, "", "clone", "-q", "--bare", work, bare)
	git(t, env, bare, "config", "http.receivepack", "true")
}
