// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb
// into a temporary directory, the server on a unix socket only, one fresh
// database per test.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv, set to 1, turns "PostgreSQL cannot run here" from a skip
// into a failure: CI sets it, so that the PostgreSQL tests cannot silently
// go untested.
const RequireEnv = "SLUICE_REQUIRE_POSTGRES"

// Cluster is a running throwaway server.
type Cluster struct {
	// Dir holds the data directory and the server's socket.
	Dir string
	// Port names the socket file (.s.PGSQL.<port>); nothing listens on TCP.
	Port int

	cmd  *exec.Cmd
	next atomic.Int64
	done chan struct{}
}

var (
	once    sync.Once
	shared  *Cluster
	started error
)

// Shared returns the cluster of this test binary, starting it on first use.
// Where PostgreSQL cannot run, tb is skipped, loudly, or failed when
// RequireEnv is set. Stop it from TestMain with Main.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	once.Do(func() { shared, started = Start() })
	if started != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("PostgreSQL required (%s=1) but cannot run: %v", RequireEnv, started)
		}
		tb.Skipf("PostgreSQL NOT TESTED: %v (install the postgresql package; CI sets %s=1)", started, RequireEnv)
	}
	return shared
}

// New starts a cluster of tb's own, stopped when tb ends; it skips or fails
// as Shared does. For packages without a TestMain to stop a shared one.
func New(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := Start()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("PostgreSQL required (%s=1) but cannot run: %v", RequireEnv, err)
		}
		tb.Skipf("PostgreSQL NOT TESTED: %v (install the postgresql package; CI sets %s=1)", err, RequireEnv)
	}
	tb.Cleanup(c.Stop)
	return c
}

// Main runs the tests and then stops the shared cluster, if one started:
// func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	if started != nil {
		fmt.Fprintf(os.Stderr, "pgtest: PostgreSQL NOT TESTED: %v\n", started)
	}
	return code
}

// binDir finds PostgreSQL's programs: Debian keeps them off PATH, in
// /usr/lib/postgresql/<major>/bin.
func binDir() (string, error) {
	if d := os.Getenv("SLUICE_POSTGRES_BIN"); d != "" {
		return d, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool { return major(found[i]) > major(found[j]) })
	if len(found) > 0 {
		return filepath.Dir(found[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no initdb in /usr/lib/postgresql/*/bin or on PATH")
}

func major(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// runAs is the user the server runs as: PostgreSQL refuses to run as root,
// so as root it is the postgres user (or nobody); otherwise nil, ourselves.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and no postgres or nobody user to run the server as")
}

// Start initialises and starts a new cluster. Most tests want Shared.
func Start() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-pg-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	c := &Cluster{Dir: dir, Port: 5432, done: make(chan struct{})}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "sluice", "--auth=trust",
		"-E", "UTF8", "--no-locale", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, lastLines(out))
	}
	args := []string{"-D", data, "-k", dir, "-p", strconv.Itoa(c.Port), "-c", "listen_addresses=",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB"}
	// Durability off: the tests kill sluice, never this server. Measurements
	// (docs/scaling.md) set SLUICE_POSTGRES_DURABLE=1 to keep it.
	if os.Getenv("SLUICE_POSTGRES_DURABLE") != "1" {
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off")
	}
	c.cmd = exec.Command(filepath.Join(bin, "postgres"), args...)
	log, _ := os.Create(filepath.Join(dir, "server.log"))
	c.cmd.Stdout, c.cmd.Stderr = log, log
	// Pdeathsig: a test binary that dies takes its server with it.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	if err := c.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("postgres: %w", err)
	}
	go func() { c.cmd.Wait(); log.Close(); close(c.done) }()
	if err := c.waitReady(30 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case <-c.done:
			b, _ := os.ReadFile(filepath.Join(c.Dir, "server.log"))
			return fmt.Errorf("postgres exited: %s", lastLines(b))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after %v: %v", limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DSN is the connection string for database name on the cluster.
func (c *Cluster) DSN(name string) string {
	return fmt.Sprintf("host=%s port=%d user=sluice dbname=%s sslmode=disable", c.Dir, c.Port, name)
}

// NewDatabase creates an empty database for tb and returns its DSN. It is
// dropped when tb ends.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), c.next.Add(1))
	if err := c.exec(context.Background(), `CREATE DATABASE `+name); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		c.exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	})
	return c.DSN(name)
}

func (c *Cluster) exec(ctx context.Context, q string) error {
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, q)
	return err
}

// Stop shuts the server down (fast: it rolls back open transactions) and
// removes its directory.
func (c *Cluster) Stop() {
	if c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			c.cmd.Process.Kill()
			<-c.done
		}
	}
	os.RemoveAll(c.Dir)
}

func lastLines(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], " | ")
}
