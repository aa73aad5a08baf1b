package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/store"
)

var adminLine = regexp.MustCompile(`admin on http://(\S+)`)

// refusedClient sends plain-HTTP requests through the proxy as tenant
// "default"; every one is refused (the embedded default allows nothing).
func refusedClient(t *testing.T, proxyAddr, dataDir string) *http.Client {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(dataDir, "default.token"))
	if err != nil {
		t.Fatal(err)
	}
	u := &url.URL{Scheme: "http", Host: proxyAddr, User: url.UserPassword("default", strings.TrimSpace(string(tok)))}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}}
}

// hammer sends n refused requests from workers goroutines and returns the
// incident ids the clients received. It stops early once stop is closed.
func hammer(c *http.Client, n, workers int, stop <-chan struct{}, got *atomic.Int64) []string {
	var mu sync.Mutex
	var ids []string
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get(fmt.Sprintf("http://denied-%d.example.test/p/%d", i%7, i))
				if err != nil {
					continue // the gateway was killed
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if id := resp.Header.Get("Sluice-Incident"); resp.StatusCode == 403 && id != "" {
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
					got.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return ids
}

// checkStored opens the database as found on disk and checks its
// integrity and that every id is in it.
func checkStored(t *testing.T, dbPath string, ids []string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q %v", ok, err)
	}
	var rows int
	db.QueryRow("SELECT COUNT(*) FROM incidents").Scan(&rows)
	missing := 0
	for _, id := range ids {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM incidents WHERE id = ?", id).Scan(&n); err != nil || n != 1 {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d incident ids handed to clients are not in the database (%d rows)", missing, len(ids), rows)
	}
	return rows
}

// TestHelperServe is not a test: TestIncidentsSurviveSIGKILL runs the test
// binary again with SLUICE_HELPER_SERVE set, and this runs `sluice serve`
// in that child until it is killed.
func TestHelperServe(t *testing.T) {
	args := os.Getenv("SLUICE_HELPER_SERVE")
	if args == "" {
		t.Skip("helper process")
	}
	os.Exit(Run(context.Background(), strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// TestIncidentsSurviveSIGKILL runs serve in a child process, hammers it
// with refused requests, SIGKILLs it in the middle of the load and then
// checks that the database is intact and holds every incident id a client
// was given: Emit returns an id only after its batch committed.
func TestIncidentsSurviveSIGKILL(t *testing.T) {
	dataDir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServe$")
	cmd.Env = append(os.Environ(), "SLUICE_HELPER_SERVE="+strings.Join([]string{"serve", "--data-dir", dataDir,
		"--proxy", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--log-level", "warn"}, "\x1f"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := proxyLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var proxy string
	select {
	case proxy = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatalf("child did not start:\n%s", stderr.String())
	}

	const total, killAfter = 2000, 600
	c := refusedClient(t, proxy, dataDir)
	stop := make(chan struct{})
	var got atomic.Int64
	var killedAt int64
	go func() {
		for got.Load() < killAfter {
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		killedAt = got.Load()
		time.Sleep(100 * time.Millisecond)
		close(stop)
	}()
	start := time.Now()
	ids := hammer(c, total, 32, stop, &got)
	el := time.Since(start)
	cmd.Wait()
	if len(ids) < killAfter || len(ids) >= total {
		t.Fatalf("%d ids received; want the kill to land mid-load (after %d)", len(ids), killAfter)
	}
	rows := checkStored(t, filepath.Join(dataDir, store.FileName), ids)
	t.Logf("killed after %d responses; %d ids received in %v (%.0f refusals/s), all among %d stored rows",
		killedAt, len(ids), el.Round(time.Millisecond), float64(len(ids))/el.Seconds(), rows)
}

// TestServeDrainsIncidentsOnShutdown stops serve normally while clients are
// still being refused: every id handed out is stored, the admin listener is
// announced and answers, and the metrics moved.
func TestServeDrainsIncidentsOnShutdown(t *testing.T) {
	dataDir := t.TempDir()
	proxy, stdout, stderr, stopServe := startDefault(t, dataDir)
	m := adminLine.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no admin URL in the output:\n%s", stdout.String())
	}
	admin := "http://" + m[1]
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
		resp, err := http.Get(admin + path)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("%s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}

	c := refusedClient(t, proxy, dataDir)
	stop := make(chan struct{})
	var got atomic.Int64
	go func() {
		for got.Load() < 100 {
			time.Sleep(time.Millisecond)
		}
		resp, err := http.Get(admin + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), `sluice_decisions_total{action="block",reason="host-not-allowed",tenant="default"}`) ||
				!strings.Contains(string(b), "sluice_store_batch_seconds_count") {
				t.Errorf("metrics did not move:\n%s", b)
			}
			if strings.Contains(string(b), "example.test") {
				t.Error("a host reached the metrics")
			}
		} else {
			t.Error(err)
		}
		if code := stopServe(); code != 0 {
			t.Errorf("serve exited %d:\n%s", code, stderr.String())
		}
		close(stop)
	}()
	ids := hammer(c, 600, 8, stop, &got)
	<-stop
	if len(ids) < 100 {
		t.Fatalf("only %d ids", len(ids))
	}
	checkStored(t, filepath.Join(dataDir, store.FileName), ids)
	if resp, err := http.Get(admin + "/healthz"); err == nil {
		resp.Body.Close()
		t.Error("the admin listener still answers after shutdown")
	}
}

// TestServeAdminPortInUse: an admin address that cannot be bound is a
// start-up error that names the flag.
func TestServeAdminPortInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dataDir := t.TempDir()
	var stdout, stderr syncBuffer
	code := Run(context.Background(), []string{"serve", "--data-dir", dataDir, "--proxy", "127.0.0.1:0",
		"--admin", busy.Addr().String()}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "admin listener") || !strings.Contains(stderr.String(), "--admin") {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
}
