package testnet

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstreamIP is where the self-tests serve, as the lead's end-to-end tests will.
var upstreamIP = netip.MustParseAddr("198.51.100.10")

// get fetches url with c and returns the status and body.
func get(t *testing.T, c *http.Client, url string) (int, string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// mustReach fails the test unless the gateway namespace gets "hello from <host>" from url.
func mustReach(t *testing.T, c *http.Client, url, host string) {
	t.Helper()
	code, body, err := get(t, c, url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if want := "hello from " + host; code != http.StatusOK || body != want {
		t.Fatalf("GET %s = %d %q, want 200 %q", url, code, body, want)
	}
}

// mustNotDial fails the test if ns can open a TCP connection to addr within 2s.
func mustNotDial(t *testing.T, ns *NS, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := ns.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		t.Fatalf("%s reached %s directly; it must have no way out but the gateway", ns.Name, addr)
	}
	t.Logf("direct %s -> %s failed as it must: %v", ns.Name, addr, err)
}

func TestWorld(t *testing.T) {
	before := rootLinks(t)
	w := New(t)
	ca := NewTestCA(t, "upstream")
	up := w.ServeUpstream(t, HostPort(upstreamIP, 443), ca.ServerTLS(t, upstreamIP.String(), "up.example.test"), nil)
	if up.URL != "https://198.51.100.10" {
		t.Errorf("URL = %q, want https://198.51.100.10", up.URL)
	}

	t.Run("root namespace untouched", func(t *testing.T) {
		for name := range rootLinks(t) {
			if !before[name] && strings.HasPrefix(name, "sl-") {
				t.Errorf("link %s appeared in the root namespace", name)
			}
		}
	})

	t.Run("gateway reaches upstream over h2", func(t *testing.T) {
		c := w.Gateway.HTTPClient(nil, ca.Pool())
		resp, err := c.Get(up.URL + "/x?y=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Errorf("proto = %s, want HTTP/2", resp.Proto)
		}
		mustReach(t, c, up.URL, upstreamIP.String())
		seen := up.Seen()
		if len(seen) < 1 || seen[0].Path != "/x" || seen[0].Host != "198.51.100.10" || seen[0].Method != "GET" {
			t.Errorf("Seen()[0] = %+v", seen)
		}
		if up.Requests.Load() != int64(len(seen)) {
			t.Errorf("Requests = %d, Seen = %d", up.Requests.Load(), len(seen))
		}
	})

	t.Run("gateway refuses an upstream signed by another CA", func(t *testing.T) {
		other := NewTestCA(t, "other")
		_, _, err := get(t, w.Gateway.HTTPClient(nil, other.Pool()), up.URL)
		var uerr x509.UnknownAuthorityError
		if err == nil || !errors.As(err, &uerr) {
			t.Fatalf("err = %v, want unknown authority", err)
		}
	})

	t.Run("upstream records body", func(t *testing.T) {
		c := w.Gateway.HTTPClient(nil, ca.Pool())
		body := strings.Repeat("s", 70<<10)
		resp, err := c.Post(up.URL+"/upload", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		seen := up.Seen()
		last := seen[len(seen)-1]
		if last.Method != "POST" || string(last.Body) != body[:64<<10] {
			t.Errorf("recorded %s with %d body bytes, want POST with %d", last.Method, len(last.Body), 64<<10)
		}
	})

	// Direct attempts time out (the gateway drops silently), so they run in parallel.
	t.Run("sandbox has no direct way out", func(t *testing.T) {
		for _, addr := range []string{up.Addr, HostPort(w.InternetAddr, 443)} {
			t.Run(addr, func(t *testing.T) {
				t.Parallel()
				mustNotDial(t, w.Sandbox, addr)
			})
		}
		t.Run("http client without proxy", func(t *testing.T) {
			t.Parallel()
			c := w.SandboxHTTPClient(nil, ca.Pool())
			c.Timeout = 2 * time.Second
			if _, _, err := get(t, c, up.URL); err == nil {
				t.Fatal("sandbox HTTP client without proxy reached the upstream")
			}
		})
	})

	t.Run("sandbox reaches a listener in the gateway", func(t *testing.T) {
		ln, err := w.Gateway.Listen("tcp", HostPort(w.GatewaySandboxAddr, 0))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			if c, err := ln.Accept(); err == nil {
				io.WriteString(c, "gw")
				c.Close()
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := w.Sandbox.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := c.RemoteAddr().(*net.TCPAddr).IP.String(); got != "192.0.2.1" {
			t.Errorf("remote = %s", got)
		}
		if local := c.LocalAddr().(*net.TCPAddr).IP.String(); local != w.SandboxAddr.String() {
			t.Errorf("local = %s, want %s", local, w.SandboxAddr)
		}
		b, _ := io.ReadAll(c)
		if string(b) != "gw" {
			t.Errorf("read %q", b)
		}
	})

	t.Run("curl in gateway", func(t *testing.T) {
		pem := ca.WritePEM(t, "")
		out, err := w.Gateway.Run(t, "curl", "-sS", "--max-time", "10", "--cacert", pem, up.URL+"/curl")
		if err != nil {
			t.Fatal(err)
		}
		if out != "hello from 198.51.100.10" {
			t.Errorf("curl = %q", out)
		}
		// Without the CA curl must refuse: the upstream is not publicly trusted.
		if _, err := w.Gateway.Run(t, "curl", "-sS", "--max-time", "10", up.URL); err == nil {
			t.Error("curl trusted the test upstream without its CA")
		}
	})

	t.Run("gateway forwarding is off", func(t *testing.T) {
		out, err := w.Gateway.Run(t, "cat", "/proc/sys/net/ipv4/ip_forward")
		if err != nil || strings.TrimSpace(out) != "0" {
			t.Errorf("ip_forward = %q, %v; want 0", out, err)
		}
		out, err = w.Gateway.Run(t, "nft", "list", "chain", "inet", "sluice_testnet", "forward")
		if err != nil || !strings.Contains(out, "policy drop") {
			t.Errorf("forward chain = %q, %v; want policy drop", out, err)
		}
	})
}

func TestUpstreamAddrs(t *testing.T) {
	w := New(t)
	for _, tc := range []struct {
		name string
		addr string
	}{
		{"documentation range", "203.0.113.10"},
		{"private host", "10.77.0.10"},
		{"metadata host", "169.254.169.254"},
		{"unrouted until added", "100.64.0.10"},
		{"same subnet as gateway", "198.51.100.11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // the negative dial waits out its 2s timeout
			a := netip.MustParseAddr(tc.addr)
			w.AddUpstreamAddr(t, a)
			w.AddUpstreamAddr(t, a) // idempotent
			up := w.ServeUpstream(t, HostPort(a, 80), nil, nil)
			if up.URL != "http://"+tc.addr {
				t.Errorf("URL = %q", up.URL)
			}
			mustReach(t, w.Gateway.HTTPClient(nil, nil), up.URL, tc.addr)
			mustNotDial(t, w.Sandbox, up.Addr)
		})
	}
}

// TestForwardDropIsEnforced shows that the nftables chain alone keeps the sandbox in, and that
// the negative checks above can fail: with forwarding on and the chain gone, the sandbox gets
// through.
func TestForwardDropIsEnforced(t *testing.T) {
	w := New(t)
	up := w.ServeUpstream(t, HostPort(upstreamIP, 80), nil, nil)
	if _, err := w.Gateway.Run(t, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"); err != nil {
		t.Fatal(err)
	}
	mustNotDial(t, w.Sandbox, up.Addr)

	if _, err := w.Gateway.Run(t, "nft", "delete", "table", "inet", "sluice_testnet"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := w.Sandbox.DialContext(ctx, "tcp", up.Addr)
	if err != nil {
		t.Fatalf("with forwarding on and no drop chain the sandbox should get through: %v", err)
	}
	c.Close()
}

func TestGit(t *testing.T) {
	w := New(t)
	ca := NewTestCA(t, "git")
	root := t.TempDir()
	MakeBareRepo(t, root, "demo")
	up := w.ServeUpstream(t, HostPort(upstreamIP, 443), ca.ServerTLS(t, upstreamIP.String()), GitHandler(t, root))
	pem := ca.WritePEM(t, "")
	env := GitEnv(t)
	work := filepath.Join(t.TempDir(), "demo")

	gitNS := func(dir string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := w.Gateway.Command(ctx, "git", append([]string{"-c", "http.sslCAInfo=" + pem}, args...)...)
		cmd.Env, cmd.Dir = env, dir
		out, err := run(cmd)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	gitNS("", "clone", "-q", up.URL+"/demo.git", work)
	if b, err := os.ReadFile(filepath.Join(work, "README.md")); err != nil || string(b) != "hello sluice\n" {
		t.Fatalf("README.md = %q, %v", b, err)
	}

	if err := os.WriteFile(filepath.Join(work, "NEW.md"), []byte("pushed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitNS(work, "add", "NEW.md")
	gitNS(work, "commit", "-q", "-m", "second")
	gitNS(work, "push", "-q", "origin", "main")

	log := git(t, env, filepath.Join(root, "demo.git"), "log", "--format=%s", "main")
	if log != "second\ninitial commit\n" {
		t.Errorf("bare repo log = %q, want the pushed commit on top", log)
	}
	var receive bool
	for _, r := range up.Seen() {
		receive = receive || strings.HasSuffix(r.Path, "/git-receive-pack")
	}
	if !receive {
		t.Error("upstream saw no git-receive-pack request")
	}
}

func TestConcurrentWorlds(t *testing.T) {
	var mu sync.Mutex
	var names []string
	t.Run("group", func(t *testing.T) {
		for _, name := range []string{"a", "b"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				w := New(t)
				mu.Lock()
				names = append(names, w.Sandbox.Name, w.Gateway.Name, w.Internet.Name)
				mu.Unlock()
				ca := NewTestCA(t, name)
				up := w.ServeUpstream(t, HostPort(upstreamIP, 443), ca.ServerTLS(t, upstreamIP.String()), nil)
				mustReach(t, w.Gateway.HTTPClient(nil, ca.Pool()), up.URL, upstreamIP.String())
				mustNotDial(t, w.Sandbox, up.Addr)
			})
		}
	})
	if len(names) != 6 {
		t.Fatalf("got namespaces %v, want 6", names)
	}
	out, err := ip("netns", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.Contains(" "+strings.Join(strings.Fields(out), " ")+" ", " "+n+" ") {
			t.Errorf("namespace %s survived cleanup", n)
		}
	}
}

func TestSweepStale(t *testing.T) {
	New(t) // skips without root
	// A pid that cannot be alive: above the kernel's pid_max limit (2^22).
	stale := Prefix + "99999999-1-sb"
	mine := Prefix + "99999999-1-sbx" // not our pattern: must survive
	for _, n := range []string{stale, mine} {
		if _, err := ip("netns", "add", n); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { ip("netns", "del", mine) })
	sweepStale()
	out, _ := ip("netns", "list")
	fields := " " + strings.Join(strings.Fields(out), " ") + " "
	if strings.Contains(fields, " "+stale+" ") {
		ip("netns", "del", stale)
		t.Error("stale namespace not swept")
	}
	if !strings.Contains(fields, " "+mine+" ") {
		t.Error("sweep removed a namespace that does not match the pattern")
	}
}

func TestCheckLiteral(t *testing.T) {
	for _, tc := range []struct {
		network, addr string
		ok            bool
	}{
		{"tcp", "192.0.2.1:3128", true},
		{"tcp", ":0", true},
		{"tcp", "[::1]:80", true},
		{"tcp", "localhost:80", false},
		{"tcp4", "up.example.test:443", false},
		{"udp", "nohost", false},
		{"unix", "/tmp/x.sock", true},
	} {
		t.Run(tc.network+" "+tc.addr, func(t *testing.T) {
			if err := checkLiteral(tc.network, tc.addr); (err == nil) != tc.ok {
				t.Errorf("checkLiteral = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// rootLinks lists the interface names of the root namespace.
func rootLinks(t *testing.T) map[string]bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	out, err := ip("-o", "link")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			m[strings.TrimSuffix(strings.SplitN(f[1], "@", 2)[0], ":")] = true
		}
	}
	return m
}
