package deploy_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// docker runs the docker CLI (the classic builder: nothing is pulled for
// FROM scratch) and returns its stdout.
func docker(t *testing.T, stdin io.Reader, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

// imageFiles lists every path in an image's filesystem.
func imageFiles(t *testing.T, image string) []string {
	t.Helper()
	id := strings.TrimSpace(string(docker(t, nil, "create", image, "/none")))
	defer docker(t, nil, "rm", id)
	tr := tar.NewReader(bytes.NewReader(docker(t, nil, "export", id)))
	var files []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, h.Name)
	}
}

// TestImageBuildLeaksNothing clones the repository as a from-source build
// would see it, with a data directory beside the source (a CA key, a
// token) as `make run` leaves one. The build context docker sends must
// hold neither that directory nor .git; the image build.sh makes must hold
// no file of it; and the binary in the image must carry make build's tag.
func TestImageBuildLeaksNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("image build skipped in -short mode")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("SLUICE_REQUIRE_DOCKER") == "1" {
			t.Fatalf("no docker engine: %v", err)
		}
		t.Skipf("UNTESTED: no docker engine (%v)", err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "src")
	if out, err := exec.Command("git", "clone", "-q", "--no-hardlinks", repo, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	for _, f := range []string{"sluice-data/ca/root.key", "sluice-data/default.token", "deploy/compose/sluice-data/demo.token"} {
		p := filepath.Join(clone, f)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("fake-test-secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tag := fmt.Sprintf("sluice-test-ctx:%d", time.Now().UnixNano())
	defer exec.Command("docker", "rmi", "-f", tag).Run()

	// The context: a scratch image holding all of it.
	docker(t, strings.NewReader("FROM scratch\nCOPY . /ctx/\n"), "build", "-q", "-t", tag, "-f", "-", clone)
	ctx := imageFiles(t, tag)
	sawSource := false
	for _, f := range ctx {
		if strings.Contains(f, "sluice-data") || strings.HasPrefix(f, "ctx/.git/") || strings.HasSuffix(f, ".token") {
			t.Errorf("the build context holds %s", f)
		}
		sawSource = sawSource || f == "ctx/go.mod"
	}
	if !sawSource {
		t.Fatalf("the context lacks go.mod: is the listing working? %v", ctx)
	}

	// The image build.sh makes from the clone.
	img := fmt.Sprintf("sluice-test-image:%d", time.Now().UnixNano())
	defer exec.Command("docker", "rmi", "-f", img).Run()
	cmd := exec.Command("sh", filepath.Join(clone, "deploy/image/build.sh"), img)
	cmd.Dir = clone
	cmd.Env = append(os.Environ(), "GOFLAGS=") // the script must set the tag itself
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	for _, f := range imageFiles(t, img) {
		if strings.Contains(f, "sluice-data") || strings.HasSuffix(f, ".token") || strings.HasSuffix(f, ".key") {
			t.Errorf("the image holds %s", f)
		}
	}
	id := strings.TrimSpace(string(docker(t, nil, "create", img)))
	defer docker(t, nil, "rm", id)
	bin := filepath.Join(t.TempDir(), "sluice")
	docker(t, nil, "cp", id+":/usr/local/bin/sluice", bin)
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-tags=gore2regex") {
		t.Errorf("the image's binary lacks the build tag:\n%s", out)
	}
}
