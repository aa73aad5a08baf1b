package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/pgtest"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

const replicaConfig = `version: 1
listen: {proxy: 127.0.0.1:0, admin: 127.0.0.1:0}
data_dir: data
store:
  driver: postgres
  dsn_env: SLUICE_TEST_REPLICA_DSN
tenants:
  acme:
    token_file: acme.token%[1]s
    classes:
      agent:
        allow:
          - host: api.example.test%[2]s
`

// replicaWorld is three Servers sharing one PostgreSQL database, one
// config file and one data directory (the tenant CA), as replicas behind
// a load balancer with a shared volume.
type replicaWorld struct {
	dir      string
	tenant   string // more of tenant acme's config (step_ca)
	replicas []*Server
	logs     []*syncBuffer
	rereads  []*rereadLog
}

// rereadLog is when a replica last heard of a peer's reload and when its
// own reread of the file finished (Unix nanoseconds; zero: never).
type rereadLog struct{ heard, done atomic.Int64 }

func newReplicaWorld(t *testing.T, n int) *replicaWorld {
	t.Helper()
	return newReplicaWorldIn(t, n, t.TempDir(), "")
}

// newReplicaWorldIn starts n replicas with their config in dir; tenant is
// more of tenant acme's config.
func newReplicaWorldIn(t *testing.T, n int, dir, tenant string) *replicaWorld {
	t.Helper()
	t.Setenv("SLUICE_TEST_REPLICA_DSN", pgtest.New(t).NewDatabase(t))
	w := &replicaWorld{dir: dir, tenant: tenant}
	tok, _ := rules.NewToken()
	mustWriteFile(t, filepath.Join(w.dir, "acme.token"), tok+"\n")
	w.writeConfig(t, "")
	for i := range n {
		cfg, err := config.Open(filepath.Join(w.dir, "sluice.yaml"), "")
		if err != nil {
			t.Fatal(err)
		}
		lb := &syncBuffer{}
		s := &Server{Config: cfg, Stdout: io.Discard, DrainTimeout: time.Second,
			Logger: slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		if err := s.Open(); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		// Each replica must hear of a reload from its peers, not its own poll.
		s.watch.Interval = time.Hour
		s.ops.Store.Replica = fmt.Sprintf("replica-%d", i)
		s.repl.ID = s.ops.Store.Replica
		rl := &rereadLog{}
		if reread := s.repl.Reread; reread != nil {
			s.repl.Reread = func(why string) {
				rl.heard.Store(time.Now().UnixNano())
				reread(why)
				rl.done.Store(time.Now().UnixNano())
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		t.Cleanup(func() {
			cancel()
			<-done
			if t.Failed() {
				t.Logf("replica %d log:\n%s", i, lb.String())
			}
		})
		w.replicas = append(w.replicas, s)
		w.logs = append(w.logs, lb)
		w.rereads = append(w.rereads, rl)
	}
	for i, s := range w.replicas {
		within(t, fmt.Sprintf("replica %d ready", i), 5*time.Second, func() bool { return s.ready(context.Background()) == nil })
	}
	return w
}

func (w *replicaWorld) writeConfig(t *testing.T, extraHost string) {
	t.Helper()
	extra := ""
	if extraHost != "" {
		extra = "\n          - host: " + extraHost
	}
	mustWriteFile(t, filepath.Join(w.dir, "sluice.yaml"), fmt.Sprintf(replicaConfig, w.tenant, extra))
}

// within polls ok every 10ms until it holds, failing the test after d.
// agreeWithin bounds how long replicas may take to agree. The goal is one
// second, and the delays measured are logged (milliseconds when the machine
// is quiet); the bound is wider so that the race detector on a loaded CI
// machine fails the test for disagreement, not for being slow.
const agreeWithin = 3 * time.Second

func within(t *testing.T, what string, d time.Duration, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// connectStatus is the status of a CONNECT through proxy.
func connectStatus(t *testing.T, proxy, token, authority string) int {
	t.Helper()
	resp := connect(t, proxy, "acme", token, authority)
	resp.Body.Close()
	return resp.StatusCode
}

// openTunnel CONNECTs and keeps the tunnel open; it returns the connection.
func openTunnel(t *testing.T, proxy, token, authority string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", authority, authority,
		base64.StdEncoding.EncodeToString([]byte("acme:"+token)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %v %v", authority, resp, err)
	}
	return c
}

// closedWithin reports whether the peer closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !strings.Contains(err.Error(), "timeout")
}

// TestReplicasAgree: what one replica does applies on the others at once —
// a run created on one works on another at its next request, an approval
// on one lets a request through another within a second, ending a run on
// one closes its tunnel on another, and a reload on one reaches the others.
func TestReplicasAgree(t *testing.T) {
	w := newReplicaWorld(t, 3)
	a, b, c := w.replicas[0], w.replicas[1], w.replicas[2]
	ctx := context.Background()

	run, err := a.runs.CreateRun(ctx, runs.Request{Tenant: "acme", Class: "agent", TTL: time.Hour, Actor: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	// At once: the next request, wherever it lands.
	if got := connectStatus(t, b.ProxyAddr(), run.Token, "api.example.test:443"); got != http.StatusOK {
		t.Fatalf("run created on a, CONNECT through b: %d", got)
	}
	if got := connectStatus(t, c.ProxyAddr(), run.Token, "grant.example.test:443"); got != http.StatusForbidden {
		t.Fatalf("before approval, CONNECT through c: %d", got)
	}

	x, err := a.ops.Store.CreateAccessRequest(ctx, store.AccessRequest{Tenant: "acme", Host: "grant.example.test",
		ExpiresAt: time.Now().Add(time.Hour), Justification: "fixture"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.runs.DecideAccess(ctx, runs.Decision{ID: x.ID, Approve: true, Reviewer: "rex"}); err != nil {
		t.Fatal(err)
	}
	d := within(t, "approval on a lets a request through c", agreeWithin, func() bool {
		return connectStatus(t, c.ProxyAddr(), run.Token, "grant.example.test:443") == http.StatusOK
	})
	t.Logf("approval on a applied on c after %v", d.Round(time.Millisecond))

	tunnel := openTunnel(t, b.ProxyAddr(), run.Token, "api.example.test:443")
	if _, err := a.runs.EndRun(ctx, run.Run.ID, "ada"); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(tunnel, agreeWithin) {
		t.Fatalf("run ended on a: its tunnel on b still open after %v", agreeWithin)
	}
	// The run's token is known to have ended: 403 run-ended, not the 407 of
	// a token nobody knows.
	// c hears of the end on its own notification, not b's: b's tunnel above
	// shows the second; c gets twice that, for a loaded machine under -race.
	within(t, "ended run's token refused through c (403 run-ended)", agreeWithin, func() bool {
		return connectStatus(t, c.ProxyAddr(), run.Token, "api.example.test:443") == http.StatusForbidden
	})

	// A reload on a: the others reread the (shared) file at once.
	tenantTok := strings.TrimSpace(readFile(t, filepath.Join(w.dir, "acme.token")))
	if got := connectStatus(t, c.ProxyAddr(), tenantTok, "new.example.test:443"); got != http.StatusForbidden {
		t.Fatalf("before the reload: %d", got)
	}
	w.writeConfig(t, "new.example.test")
	start := time.Now()
	if !a.watch.Now("test") {
		t.Fatal("reload failed")
	}
	own := time.Since(start)
	// What must take under a second is the news reaching the peers; each
	// then compiles the policy as a did (its scanner's rules: slow under the
	// race detector, and slower still with two peers compiling at once on a
	// small CI machine), so that part is waited for, not timed.
	for i, s := range w.replicas[1:] {
		rl := w.rereads[i+1]
		within(t, fmt.Sprintf("replica %d hears of a's reload", i+1), own+agreeWithin, func() bool { return rl.heard.Load() > start.UnixNano() })
		within(t, fmt.Sprintf("replica %d rereads the file", i+1), time.Minute, func() bool { return rl.done.Load() > start.UnixNano() })
		heard, done := time.Unix(0, rl.heard.Load()), time.Unix(0, rl.done.Load())
		t.Logf("replica %d heard %v after a's reload began (a's took %v); its own took %v",
			i+1, heard.Sub(start).Round(time.Millisecond), own.Round(time.Millisecond), done.Sub(heard).Round(time.Millisecond))
		if s.repl.CurrentVersion() != a.repl.CurrentVersion() {
			t.Errorf("replica %d reread the file but is on %q, a on %q", i+1, s.repl.CurrentVersion(), a.repl.CurrentVersion())
		}
	}
	// Once c has reread the file, its new policy is in force at once.
	if got := connectStatus(t, c.ProxyAddr(), tenantTok, "new.example.test:443"); got != http.StatusOK {
		t.Fatalf("after c reread the file: %d", got)
	}
}

// TestReplicaWithAnotherPolicySaysSo: a replica whose file stays behind
// its peers' reports it in metrics at once and in /readyz after the grace.
func TestReplicaWithAnotherPolicySaysSo(t *testing.T) {
	w := newReplicaWorld(t, 3)
	odd := w.replicas[2]
	odd.repl.SetVersion("stale-version")
	odd.repl.Heartbeat(context.Background())
	for _, s := range w.replicas[:2] {
		s.repl.Heartbeat(context.Background())
	}
	odd.repl.Heartbeat(context.Background())
	since := odd.repl.Differing()
	odd.repl.SkewGrace = time.Nanosecond // as if it lasted
	if since.IsZero() {
		t.Fatal("the odd replica does not see that it differs")
	}
	err := odd.ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), "stale-version differs from") {
		t.Fatalf("ready: %v", err)
	}
	for i, s := range w.replicas[:2] {
		if err := s.ready(context.Background()); err != nil {
			t.Errorf("replica %d, on the majority's version: %v", i, err)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const killConfig = `version: 1
listen: {proxy: 127.0.0.1:0, admin: 127.0.0.1:0}
data_dir: data
store:
  driver: postgres
  dsn_env: SLUICE_TEST_REPLICA_DSN
tenants:
  default:
    token_file: data/default.token
    classes:
      agent:
        allow: []
`

// TestIncidentsSurviveSIGKILLOnPostgres is TestIncidentsSurviveSIGKILL with
// the store in PostgreSQL: a replica killed under load has committed every
// incident id it handed to a client.
func TestIncidentsSurviveSIGKILLOnPostgres(t *testing.T) {
	dsn := pgtest.New(t).NewDatabase(t)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	tok, _ := rules.NewToken()
	os.MkdirAll(dataDir, 0o700)
	mustWriteFile(t, filepath.Join(dataDir, "default.token"), tok+"\n")
	mustWriteFile(t, filepath.Join(dir, "sluice.yaml"), killConfig)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServe$")
	cmd.Env = append(os.Environ(), "SLUICE_TEST_REPLICA_DSN="+dsn, "SLUICE_HELPER_SERVE="+strings.Join([]string{"serve",
		"--config", filepath.Join(dir, "sluice.yaml"), "--log-level", "warn"}, "\x1f"))
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
	go func() {
		for got.Load() < killAfter {
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
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
	st, err := store.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	missing := 0
	for _, id := range ids {
		if _, err := st.GetIncident(context.Background(), id); err != nil {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d incident ids handed to clients are not in PostgreSQL", missing, len(ids))
	}
	t.Logf("%d ids received in %v (%.0f refusals/s), all stored", len(ids), el.Round(time.Millisecond), float64(len(ids))/el.Seconds())
}
