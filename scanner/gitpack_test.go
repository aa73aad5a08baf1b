package scanner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitRun runs git in dir with a fixed identity and no user config.
func gitRun(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.test")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// pushBody is what git sends to git-receive-pack to create refs/heads/main
// at the repository's HEAD: the ref update as a pkt-line, a flush, and a
// packfile of every object (pack-objects, as git push runs it), its deltas
// naming their bases by offset (ofs) or by id.
func pushBody(t *testing.T, dir string, ofs bool) string {
	head := strings.TrimSpace(gitRun(t, dir, "", "rev-parse", "HEAD"))
	objects := gitRun(t, dir, "", "rev-list", "--objects", "--all")
	args := []string{"pack-objects", "--stdout", "-q"}
	if ofs {
		args = append(args, "--delta-base-offset")
	}
	pack := gitRun(t, dir, objects, args...)
	line := strings.Repeat("0", len(head)) + " " + head + " refs/heads/main\x00 report-status side-band-64k\n"
	return fmt.Sprintf("%04x", len(line)+4) + line + "0000" + pack
}

// A file committed with a token in it and pushed is found in the push's
// packfile: a file whole, and a token committed and removed after, which
// pack-objects keeps in a delta on the file as it is now.
func TestGitPushHidesNoToken(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on this machine")
	}
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	var lines []string
	for i := range 400 {
		lines = append(lines, fmt.Sprintf("line %d of the configuration notes", i))
	}
	notes := func(dir string) {
		os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	}
	commit := func(dir, msg string) {
		gitRun(t, dir, "", "add", "-A")
		gitRun(t, dir, "", "commit", "-q", "-m", msg)
	}
	// pushes scans the push of dir, its deltas' bases by offset and by id;
	// it reports whether both found the token.
	pushes := func(name, dir string) bool {
		ok := true
		for _, ofs := range []bool{false, true} {
			body := pushBody(t, dir, ofs)
			if !strings.Contains(body, "PACK") || strings.Contains(body, tok) {
				t.Fatalf("%s: the push body is no packfile with the token compressed", name)
			}
			res := scanTyped(t, s, "application/x-git-receive-pack-request", body)
			found := res.Verdict == Block && slices.ContainsFunc(res.Findings, func(f Finding) bool { return string(f.secret) == tok && f.Decoding == encGitPack })
			if !found {
				t.Logf("%s, bases by offset %v: verdict %v:%s", name, ofs, res.Verdict, dump(res.Findings))
			}
			ok = ok && found
		}
		return ok
	}
	// push makes a repository with build (of SHA-1 ids, and of SHA-256
	// ones where git can) and scans its push, its deltas' bases by offset
	// and by id; it reports whether every scan found the token.
	push := func(name string, build func(dir string)) bool {
		ok := true
		for _, format := range []string{"sha1", "sha256"} {
			dir := t.TempDir()
			if err := exec.Command("git", "init", "-q", "-b", "main", "--object-format="+format, dir).Run(); err != nil {
				if format == "sha1" {
					t.Fatal(err)
				}
				t.Logf("git cannot make a repository of %s ids here (%v): left out", format, err)
				continue
			}
			build(dir)
			ok = pushes(name+", "+format, dir) && ok
		}
		return ok
	}
	clean := t.TempDir()
	gitRun(t, clean, "", "init", "-q", "-b", "main")
	notes(clean)
	commit(clean, "notes")
	if res := scanTyped(t, s, "application/x-git-receive-pack-request", pushBody(t, clean, true)); res.Verdict != Pass {
		t.Errorf("a push without a secret: verdict %v:%s", res.Verdict, dump(res.Findings))
	}
	if !push("whole", func(dir string) {
		notes(dir)
		os.WriteFile(filepath.Join(dir, "new.env"), []byte("GITHUB_TOKEN="+tok+"\n"), 0o644)
		commit(dir, "env")
	}) {
		t.Error("a new file: want block with the token found in the packfile")
	}
	if !push("delta", func(dir string) {
		lines[200] = "token = " + tok
		notes(dir)
		commit(dir, "with the token")
		// The file grows after: pack-objects keeps the larger, later
		// version whole and the one with the token as a delta on it.
		lines[200] = "token = (removed)"
		for i := range 50 {
			lines = append(lines, fmt.Sprintf("more notes %d", i))
		}
		notes(dir)
		commit(dir, "without it")
	}) {
		t.Error("a token committed and removed: want block with the token found in the packfile")
	}
}

// FuzzPackObjects: any bytes after a packfile's signature are read without
// a panic, and never inflate past the limit.
func FuzzPackObjects(f *testing.F) {
	blob := compress(f, "deflate", []byte("hello, world"))
	f.Add(append([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x02\x3c"), append(blob, append([]byte{0x6c, 0x05}, blob...)...)...))
	f.Add([]byte("PACK\x00\x00\x00\x02\xff\xff\xff\xff\x7f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := packObjects(b, 20, 1<<16, nil)
		if err == nil && len(out) > 1<<16+int(len(b)) {
			t.Fatalf("%d bytes out of %d", len(out), len(b))
		}
	})
}
