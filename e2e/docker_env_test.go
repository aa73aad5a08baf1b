package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// dockerLabel marks everything the docker test creates; its value is the
// creation time (unix seconds), so that a later run can remove what a
// killed run left behind.
const dockerLabel = "sluice-e2e"

// toolsRecipe names what the cached Debian tools image holds; change it to
// rebuild the cache.
const (
	toolsRecipe   = "debootstrap --variant=minbase v1"
	toolsPackages = "ca-certificates,curl,git"
)

// progress prints a line at once (go test holds t.Log until the test ends):
// a cold run spends minutes in debootstrap.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "docker e2e %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// requireDocker skips (loudly, as untested) or fails, per SLUICE_REQUIRE_DOCKER.
func requireDocker(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("SLUICE_REQUIRE_DOCKER") == "1" {
		t.Fatalf("docker e2e: %s (SLUICE_REQUIRE_DOCKER=1)", why)
	}
	t.Skipf("UNTESTED: docker e2e: %s (set SLUICE_REQUIRE_DOCKER=1 to make this a failure)", why)
}

// dockerCmd runs the docker CLI with a timeout and returns trimmed stdout.
func dockerCmd(ctx context.Context, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0") // no buildx here: the classic builder
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return strings.TrimSpace(stdout.String()), fmt.Errorf("docker %s: %w\n%s", strings.Join(args, " "), err, lastLines(stderr.String(), 20))
	}
	return strings.TrimSpace(stdout.String()), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// docker is the test's handle on the engine: every object it creates is
// labelled and removed at the end.
type docker struct {
	t      *testing.T
	prefix string // name prefix of this run's objects
	label  string // --label value
}

func newDocker(t *testing.T) *docker {
	b := make([]byte, 4)
	rand.Read(b)
	d := &docker{t: t, prefix: "sluice-e2e-" + hex.EncodeToString(b), label: dockerLabel + "=" + strconv.FormatInt(time.Now().Unix(), 10)}
	d.removeStale()
	return d
}

// run runs docker and fails the test on error.
func (d *docker) run(timeout time.Duration, args ...string) string {
	d.t.Helper()
	out, err := dockerCmd(context.Background(), timeout, args...)
	if err != nil {
		d.t.Fatal(err)
	}
	return out
}

// cleanup registers a best-effort removal.
func (d *docker) cleanup(args ...string) {
	d.t.Cleanup(func() {
		if _, err := dockerCmd(context.Background(), time.Minute, args...); err != nil {
			d.t.Logf("cleanup: %v", err)
		}
	})
}

// removeStale removes this test's objects left by a run that was killed
// more than 30 minutes ago (only objects carrying dockerLabel).
func (d *docker) removeStale() {
	cutoff := time.Now().Add(-30 * time.Minute).Unix()
	stale := func(kind, id string, list ...string) []string {
		out, err := dockerCmd(context.Background(), 30*time.Second, append(list, "--filter", "label="+dockerLabel, "--format", `{{.`+id+`}} {{.Label "`+dockerLabel+`"}}`)...)
		if err != nil {
			return nil
		}
		var ids []string
		for _, l := range strings.Split(out, "\n") {
			id, ts, _ := strings.Cut(l, " ")
			if n, err := strconv.ParseInt(ts, 10, 64); err == nil && n < cutoff {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			progress("removing %d stale %s from an earlier run", len(ids), kind)
		}
		return ids
	}
	if ids := stale("containers", "ID", "ps", "-a"); len(ids) > 0 {
		dockerCmd(context.Background(), time.Minute, append([]string{"rm", "-f", "-v"}, ids...)...)
	}
	if ids := stale("networks", "ID", "network", "ls"); len(ids) > 0 {
		dockerCmd(context.Background(), time.Minute, append([]string{"network", "rm"}, ids...)...)
	}
	if ids := stale("volumes", "Name", "volume", "ls"); len(ids) > 0 {
		dockerCmd(context.Background(), time.Minute, append([]string{"volume", "rm"}, ids...)...)
	}
}

// build builds an image from a context dir and registers its removal.
func (d *docker) build(name, dockerfile, ctxDir string, buildArgs ...string) string {
	d.t.Helper()
	tag := d.prefix + "-" + name + ":test"
	args := []string{"build", "-q", "--label", d.label, "-t", tag}
	if dockerfile != "" {
		args = append(args, "-f", dockerfile)
	}
	for _, a := range buildArgs {
		args = append(args, "--build-arg", a)
	}
	start := time.Now()
	d.run(5*time.Minute, append(args, ctxDir)...)
	d.cleanup("rmi", "-f", tag)
	progress("built image %s in %s", tag, time.Since(start).Round(time.Millisecond))
	return tag
}

// aptSource reads the Debian mirror and suite from this machine's apt
// sources (deb822 *.sources first, then one-line *.list files).
func aptSource() (mirror, suite string, err error) {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, stanza := range strings.Split(string(b), "\n\n") {
			fields := map[string]string{}
			for _, l := range strings.Split(stanza, "\n") {
				if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(strings.TrimSpace(l), "#") {
					fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
			}
			if !strings.Contains(" "+fields["Types"]+" ", " deb ") || fields["Enabled"] == "no" {
				continue
			}
			uris, suites := strings.Fields(fields["URIs"]), strings.Fields(fields["Suites"])
			if len(uris) > 0 && len(suites) > 0 && !strings.Contains(suites[0], "-") &&
				strings.Contains(" "+fields["Components"]+" ", " main ") {
				return uris[0], suites[0], nil
			}
		}
	}
	lists, _ := filepath.Glob("/etc/apt/sources.list.d/*.list")
	for _, f := range append([]string{"/etc/apt/sources.list"}, lists...) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			fs := strings.Fields(l)
			if len(fs) < 4 || fs[0] != "deb" {
				continue
			}
			fs = fs[1:]
			if strings.HasPrefix(fs[0], "[") { // [options]
				for len(fs) > 0 && !strings.HasSuffix(fs[0], "]") {
					fs = fs[1:]
				}
				fs = fs[1:]
			}
			if len(fs) >= 3 && !strings.Contains(fs[1], "-") && slicesContains(fs[2:], "main") {
				return fs[0], fs[1], nil
			}
		}
	}
	return "", "", errors.New("no Debian main suite in /etc/apt/sources.list{,.d}")
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// toolsImage returns a Debian image with curl, git and ca-certificates,
// built once with debootstrap from this machine's apt mirror and kept:
// the image (tag = hash of the recipe) stays in the engine, its root
// filesystem tarball in the cache dir (SLUICE_TEST_CACHE, default
// /var/cache/sluice-test). Neither is removed by the test.
func toolsImage(t *testing.T) string {
	t.Helper()
	mirror, suite, err := aptSource()
	if err != nil {
		requireDocker(t, "cannot build the tools image: "+err.Error())
	}
	sum := sha256.Sum256([]byte(toolsRecipe + "|" + toolsPackages + "|" + suite))
	hash := hex.EncodeToString(sum[:6])
	tag := "sluice-test-tools:" + suite + "-" + hash
	if _, err := dockerCmd(context.Background(), 30*time.Second, "image", "inspect", tag); err == nil {
		progress("tools image %s cached", tag)
		return tag
	}
	cache := os.Getenv("SLUICE_TEST_CACHE")
	if cache == "" {
		cache = "/var/cache/sluice-test"
	}
	tarball := filepath.Join(cache, "tools-"+suite+"-"+hash+".tar")
	if _, err := os.Stat(tarball); err != nil {
		if _, err := exec.LookPath("debootstrap"); err != nil {
			requireDocker(t, "debootstrap is not installed (apt-get install debootstrap) and no cached tools image")
		}
		if err := os.MkdirAll(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		root, err := os.MkdirTemp(cache, "rootfs-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(root)
		start := time.Now()
		progress("building the Debian %s tools image with debootstrap (a few minutes, once; cached in %s)", suite, cache)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+toolsPackages, suite, root, mirror)
		if err := streamProgress(cmd, "debootstrap"); err != nil {
			t.Fatalf("debootstrap: %v", err)
		}
		// Package caches are dead weight in the image.
		for _, g := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*_*"} {
			ms, _ := filepath.Glob(filepath.Join(root, g))
			for _, m := range ms {
				os.Remove(m)
			}
		}
		progress("debootstrap done in %s; writing %s", time.Since(start).Round(time.Second), tarball)
		tmp := tarball + ".tmp"
		if out, err := exec.Command("tar", "-C", root, "--numeric-owner", "-cf", tmp, ".").CombinedOutput(); err != nil {
			os.Remove(tmp)
			t.Fatalf("tar: %v\n%s", err, out)
		}
		if err := os.Rename(tmp, tarball); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if _, err := dockerCmd(context.Background(), 10*time.Minute, "import", "--change", "CMD [\"/bin/bash\"]", tarball, tag); err != nil {
		t.Fatal(err)
	}
	progress("imported %s as %s in %s", tarball, tag, time.Since(start).Round(time.Second))
	return tag
}

// streamProgress runs cmd and prints its I:/W:/E: lines as progress.
func streamProgress(cmd *exec.Cmd, name string) error {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var tail []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		n := 0
		for sc.Scan() {
			l := sc.Text()
			tail = append(tail, l)
			if len(tail) > 30 {
				tail = tail[1:]
			}
			n++
			// Every "Retrieving"/"Unpacking" line would be hundreds: show a few.
			if strings.HasPrefix(l, "E:") || strings.HasPrefix(l, "W:") || n%40 == 0 || strings.Contains(l, "Base system installed") {
				progress("%s: %s", name, l)
			}
		}
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("%w\n%s", err, strings.Join(tail, "\n"))
	}
	return nil
}

// buildStatic builds a static Go binary (CGO_ENABLED=0) for an image from scratch.
func buildStatic(t *testing.T, dir, pkg, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// upstreamSource is the test upstream: a TLS server from scratch that says
// who it is, so the test can tell it answered.
const upstreamSource = `package main

import (
	"fmt"
	"log"
	"net/http"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from upstream %s %s", r.Host, r.URL.Path)
	})
	log.Fatal(http.ListenAndServeTLS(":443", "/certs/cert.pem", "/certs/key.pem", nil))
}
`

// upstreamImage builds the upstream server image and writes its certificate
// for names (signed by ca) into certDir.
func upstreamImage(t *testing.T, d *docker, ca *testnet.TestCA, certDir string, names ...string) string {
	t.Helper()
	src := t.TempDir()
	mustWrite(t, filepath.Join(src, "go.mod"), "module upstream\n\ngo 1.22\n", 0o644)
	mustWrite(t, filepath.Join(src, "main.go"), upstreamSource, 0o644)
	ctxDir := t.TempDir()
	buildStatic(t, src, ".", filepath.Join(ctxDir, "upstream"))
	mustWrite(t, filepath.Join(ctxDir, "Dockerfile"), "FROM scratch\nCOPY upstream /upstream\nEXPOSE 443\nENTRYPOINT [\"/upstream\"]\n", 0o644)

	cert := ca.ServerTLS(t, names...).Certificates[0]
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(certDir, "cert.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})), 0o644)
	// Readable by the container; a throwaway key for a throwaway CA.
	mustWrite(t, filepath.Join(certDir, "key.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})), 0o644)
	return d.build("upstream", "", ctxDir)
}

// copyTree copies a directory (regular files and dirs only).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}
