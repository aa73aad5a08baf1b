// Package testnet builds throwaway network namespaces — a sandbox, a gateway and an internet — for end-to-end tests of Sluice.
//
// The topology, all in namespaces created for the test (the root namespace is never touched):
//
//	sandbox 192.0.2.2/24 ──veth── 192.0.2.1/24 gateway 198.51.100.1/24 ──veth── 198.51.100.2/24 internet
//	        2001:db8:1::2/64       2001:db8:1::1/64        2001:db8:2::1/64        2001:db8:2::2/64
//
// The sandbox's default route points at the gateway, but the gateway does not forward
// (ip_forward=0 and an nftables forward chain that drops everything), so the only way out of
// the sandbox is a process listening in the gateway namespace. The gateway routes
// 203.0.113.0/24, 10.77.0.0/16 and 169.254.169.254/32 to the internet namespace, where tests add
// upstream addresses with [World.AddUpstreamAddr] and serve on them with [World.ServeUpstream].
// IPv6 works the same way: the IPv6 documentation range 2001:db8::/32 plays TEST-NET (Sluice's
// guard allows it), 2001:db8:2::/64 is on-link between gateway and internet, and any other IPv6
// upstream address (a ULA, the IPv6 metadata address fd00:ec2::254) gets a /128 route.
package testnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Prefix starts the name of every namespace this package creates; the stale sweep only ever
// deletes namespaces whose names start with it and whose creating process is gone.
const Prefix = "sl-"

// netnsDir is where `ip netns add` bind-mounts named namespaces.
const netnsDir = "/var/run/netns"

// runTimeout bounds [NS.Run] and the setup commands, so that a wedged command fails the test
// instead of hanging it.
const runTimeout = 60 * time.Second

// Fixed addresses of the topology.
var (
	sandboxAddr         = netip.MustParseAddr("192.0.2.2")
	gatewaySandboxAddr  = netip.MustParseAddr("192.0.2.1")
	gatewayInternetAddr = netip.MustParseAddr("198.51.100.1")
	internetAddr        = netip.MustParseAddr("198.51.100.2")

	sandboxAddr6         = netip.MustParseAddr("2001:db8:1::2")
	gatewaySandboxAddr6  = netip.MustParseAddr("2001:db8:1::1")
	gatewayInternetAddr6 = netip.MustParseAddr("2001:db8:2::1")
	internetAddr6        = netip.MustParseAddr("2001:db8:2::2")

	// routedPrefixes are routed by the gateway to the internet namespace from the start;
	// 198.51.100.0/24 and 2001:db8:2::/64 are on-link. AddUpstreamAddr adds a /32 or /128
	// route for anything else.
	routedPrefixes = []netip.Prefix{
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("10.77.0.0/16"),
		netip.MustParsePrefix("169.254.169.254/32"),
		netip.MustParsePrefix("2001:db8:2::/64"), // on-link
	}
)

// Interface names. They only exist inside the namespaces of one world, so they need not be
// unique across worlds.
const (
	ifSandbox     = "sl-sb"    // sandbox end of the sandbox link
	ifGatewaySB   = "sl-gw-sb" // gateway end of the sandbox link
	ifGatewayInet = "sl-gw-in" // gateway end of the internet link
	ifInternet    = "sl-in"    // internet end of the internet link
)

// gatewayNft is the gateway's defence in depth: even if forwarding were switched on, nothing
// crosses between the sandbox and the internet.
const gatewayNft = `table inet sluice_testnet {
	chain forward {
		type filter hook forward priority 0; policy drop;
	}
}
`

// NS is a named network namespace, as `ip netns` knows it.
type NS struct {
	// Name is the namespace's name under /var/run/netns.
	Name string
}

// path is the namespace's bind mount, which setns(2) accepts as a file descriptor.
func (n *NS) path() string { return filepath.Join(netnsDir, n.Name) }

// Do runs fn on an OS thread switched into the namespace. Sockets that fn creates belong to
// the namespace for their whole life, whichever thread uses them later.
//
// fn must not start goroutines that create sockets (they would run on other threads, in the
// root namespace); the Go runtime itself never starts a new OS thread from a locked one.
// If the thread cannot be switched back, it is left locked so that the runtime terminates it
// when its goroutine exits instead of reusing it in the wrong namespace.
func (n *NS) Do(fn func() error) error {
	target, err := unix.Open(n.path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("testnet: open namespace %s: %w", n.Name, err)
	}
	defer unix.Close(target)

	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		orig, err := unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("testnet: open current namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("testnet: enter namespace %s: %w", n.Name, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Deliberately still locked: the goroutine exits and the runtime kills the thread.
			errc <- fmt.Errorf("testnet: leave namespace %s: %w", n.Name, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// checkLiteral refuses host names for IP networks: resolving one may run on another thread,
// in the root namespace. An empty host (listen on all addresses) is fine.
func checkLiteral(network, addr string) error {
	if !strings.HasPrefix(network, "tcp") && !strings.HasPrefix(network, "udp") {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("testnet: address %q: %w", addr, err)
	}
	if host == "" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return fmt.Errorf("testnet: address %q: host must be an IP literal, names would be resolved outside the namespace", addr)
	}
	return nil
}

// Listen announces on the local network address inside the namespace. addr's host must be
// empty or an IP literal.
func (n *NS) Listen(network, addr string) (net.Listener, error) {
	if err := checkLiteral(network, addr); err != nil {
		return nil, err
	}
	var ln net.Listener
	err := n.Do(func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("testnet: listen %s %s in %s: %w", network, addr, n.Name, err)
	}
	return ln, nil
}

// DialContext connects to addr from inside the namespace; it fits http.Transport.DialContext.
// addr's host must be an IP literal.
func (n *NS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := checkLiteral(network, addr); err != nil {
		return nil, err
	}
	var c net.Conn
	err := n.Do(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("testnet: dial %s %s from %s: %w", network, addr, n.Name, err)
	}
	return c, nil
}

// Command returns a command that runs name inside the namespace (`ip netns exec`). The
// command's process is name itself, so killing it (ctx) kills name.
func (n *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Run runs name inside the namespace with a 60s timeout and returns its standard output; the
// error includes standard error.
func (n *NS) Run(t testing.TB, name string, args ...string) (stdout string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	return run(n.Command(ctx, name, args...))
}

// run runs cmd, returning stdout and an error that quotes the command and its stderr.
func run(cmd *exec.Cmd) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("testnet: %s: %w: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// ip runs `ip args...` in the root namespace's process (most calls use `-n NAME` to act inside
// a namespace) with the setup timeout.
func ip(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	return run(exec.CommandContext(ctx, "ip", args...))
}

// World is one sandbox–gateway–internet topology. Its namespaces are deleted in t.Cleanup.
type World struct {
	Sandbox, Gateway, Internet *NS

	// SandboxAddr is 192.0.2.2, the sandbox's only address.
	SandboxAddr netip.Addr
	// GatewaySandboxAddr is 192.0.2.1, the gateway on the sandbox side: where a proxy listens.
	GatewaySandboxAddr netip.Addr
	// GatewayInternetAddr is 198.51.100.1, the gateway on the internet side.
	GatewayInternetAddr netip.Addr
	// InternetAddr is 198.51.100.2, the internet namespace's link address.
	InternetAddr netip.Addr

	// SandboxAddr6 is 2001:db8:1::2, the sandbox's IPv6 address.
	SandboxAddr6 netip.Addr
	// GatewaySandboxAddr6 is 2001:db8:1::1, the gateway on the sandbox side over IPv6.
	GatewaySandboxAddr6 netip.Addr
	// GatewayInternetAddr6 is 2001:db8:2::1, the gateway on the internet side over IPv6.
	GatewayInternetAddr6 netip.Addr
	// InternetAddr6 is 2001:db8:2::2, the internet namespace's IPv6 link address.
	InternetAddr6 netip.Addr

	mu    sync.Mutex
	addrs map[netip.Addr]bool // upstream addresses added so far
}

var (
	worldCounter atomic.Int64
	sweepOnce    sync.Once
)

// requireNetns skips the test loudly (or fails it when SLUICE_REQUIRE_NETNS=1) because
// namespaces cannot be made here.
func requireNetns(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("SLUICE_REQUIRE_NETNS") == "1" {
		t.Fatalf("testnet: SLUICE_REQUIRE_NETNS=1 but network namespaces are unavailable: %s", why)
	}
	t.Skipf("UNTESTED: needs root and ip netns: %s (set SLUICE_REQUIRE_NETNS=1 to make this fatal)", why)
}

// New builds a world. It needs root, `ip` and `nft`; without them the test is skipped with a
// loud UNTESTED message, or fails when the environment sets SLUICE_REQUIRE_NETNS=1.
// Worlds of several tests and processes can exist at once: names carry the pid and a counter.
func New(t testing.TB) *World {
	t.Helper()
	if os.Geteuid() != 0 {
		requireNetns(t, "not running as root")
	}
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			requireNetns(t, bin+" not found in PATH (apt-get install iproute2 nftables)")
		}
	}
	sweepOnce.Do(sweepStale)

	id := fmt.Sprintf("%s%d-%d", Prefix, os.Getpid(), worldCounter.Add(1))
	w := &World{
		SandboxAddr:         sandboxAddr,
		GatewaySandboxAddr:  gatewaySandboxAddr,
		GatewayInternetAddr: gatewayInternetAddr,
		InternetAddr:        internetAddr,

		SandboxAddr6:         sandboxAddr6,
		GatewaySandboxAddr6:  gatewaySandboxAddr6,
		GatewayInternetAddr6: gatewayInternetAddr6,
		InternetAddr6:        internetAddr6,

		addrs: map[netip.Addr]bool{},
	}
	for _, p := range []struct {
		ns     **NS
		suffix string
	}{{&w.Sandbox, "sb"}, {&w.Gateway, "gw"}, {&w.Internet, "in"}} {
		ns := &NS{Name: id + "-" + p.suffix}
		if _, err := ip("netns", "add", ns.Name); err != nil {
			requireNetns(t, err.Error())
		}
		t.Cleanup(func() {
			if _, err := ip("netns", "del", ns.Name); err != nil {
				t.Errorf("testnet: cleanup: %v", err)
			}
		})
		*p.ns = ns
	}
	if err := w.setup(); err != nil {
		t.Fatalf("testnet: build world %s: %v", id, err)
	}
	return w
}

// setup wires the three empty namespaces together.
func (w *World) setup() error {
	sb, gw, in := w.Sandbox.Name, w.Gateway.Name, w.Internet.Name
	steps := [][]string{
		// Links are created directly between namespaces: nothing appears in the root namespace.
		{"link", "add", ifSandbox, "netns", sb, "type", "veth", "peer", "name", ifGatewaySB, "netns", gw},
		{"link", "add", ifGatewayInet, "netns", gw, "type", "veth", "peer", "name", ifInternet, "netns", in},

		{"-n", sb, "link", "set", "lo", "up"},
		{"-n", sb, "addr", "add", w.SandboxAddr.String() + "/24", "dev", ifSandbox},
		{"-n", sb, "link", "set", ifSandbox, "up"},
		{"-n", sb, "route", "add", "default", "via", w.GatewaySandboxAddr.String()},

		{"-n", gw, "link", "set", "lo", "up"},
		{"-n", gw, "addr", "add", w.GatewaySandboxAddr.String() + "/24", "dev", ifGatewaySB},
		{"-n", gw, "addr", "add", w.GatewayInternetAddr.String() + "/24", "dev", ifGatewayInet},
		{"-n", gw, "link", "set", ifGatewaySB, "up"},
		{"-n", gw, "link", "set", ifGatewayInet, "up"},

		{"-n", in, "link", "set", "lo", "up"},
		{"-n", in, "addr", "add", w.InternetAddr.String() + "/24", "dev", ifInternet},
		{"-n", in, "link", "set", ifInternet, "up"},
		{"-n", in, "route", "add", "default", "via", w.GatewayInternetAddr.String()},

		// IPv6, with nodad so that the addresses are usable at once instead of after
		// duplicate address detection (a second or more).
		{"-n", sb, "-6", "addr", "add", w.SandboxAddr6.String() + "/64", "dev", ifSandbox, "nodad"},
		{"-n", sb, "-6", "route", "add", "default", "via", w.GatewaySandboxAddr6.String()},
		{"-n", gw, "-6", "addr", "add", w.GatewaySandboxAddr6.String() + "/64", "dev", ifGatewaySB, "nodad"},
		{"-n", gw, "-6", "addr", "add", w.GatewayInternetAddr6.String() + "/64", "dev", ifGatewayInet, "nodad"},
		{"-n", in, "-6", "addr", "add", w.InternetAddr6.String() + "/64", "dev", ifInternet, "nodad"},
		{"-n", in, "-6", "route", "add", "default", "via", w.GatewayInternetAddr6.String()},
	}
	for _, p := range routedPrefixes {
		if p.Contains(w.GatewayInternetAddr) || p.Contains(w.GatewayInternetAddr6) {
			continue // on-link
		}
		steps = append(steps, []string{"-n", gw, "route", "add", p.String(), "via", w.InternetAddr.String()})
	}
	for _, s := range steps {
		if _, err := ip(s...); err != nil {
			return err
		}
	}

	// A new namespace may inherit forwarding from the root one: switch it off explicitly.
	// /proc/sys/net shows the namespace of the thread that opens it.
	err := w.Gateway.Do(func() error {
		for _, f := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"} {
			if err := os.WriteFile(f, []byte("0\n"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("disable forwarding: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := w.Gateway.Command(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(gatewayNft)
	if _, err := run(cmd); err != nil {
		return fmt.Errorf("gateway nftables: %w", err)
	}
	return nil
}

// AddUpstreamAddr adds a to the internet namespace (IPv4 on its lo, IPv6 on its link) so that
// upstreams can listen on it, and makes the gateway route it there. Adding an address twice is
// harmless. a may be IPv4 or IPv6 (e.g. 2001:db8:2::10, a ULA, fd00:ec2::254); an IPv4-mapped address is added as the
// IPv4 address it maps, since the kernel cannot assign ::ffff:a.b.c.d. Loopback, multicast,
// link-local, unspecified and zoned addresses are refused: they cannot be an upstream's.
func (w *World) AddUpstreamAddr(t testing.TB, a netip.Addr) {
	t.Helper()
	if err := w.addUpstreamAddr(a); err != nil {
		t.Fatalf("testnet: %v", err)
	}
}

func (w *World) addUpstreamAddr(a netip.Addr) error {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" || a.IsLoopback() || a.IsUnspecified() || a.IsMulticast() ||
		(a.Is6() && a.IsLinkLocalUnicast()) {
		return fmt.Errorf("add upstream address %s: not assignable as an upstream address", a)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.addrs[a] || a == w.InternetAddr || a == w.InternetAddr6 {
		return nil
	}
	host := netip.PrefixFrom(a, a.BitLen()).String()
	add := []string{"-n", w.Internet.Name, "-4", "addr", "add", host, "dev", "lo"}
	family, via := "-4", w.InternetAddr
	if a.Is6() {
		// On the link, not on lo: the internet namespace answers neighbour solicitations
		// (for the on-link 2001:db8:2::/64) only for addresses on the soliciting link.
		// nodad: usable at once, without duplicate address detection.
		add = []string{"-n", w.Internet.Name, "-6", "addr", "add", host, "dev", ifInternet, "nodad"}
		family, via = "-6", w.InternetAddr6
	}
	if _, err := ip(add...); err != nil {
		return err
	}
	routed := false
	for _, p := range routedPrefixes {
		routed = routed || p.Contains(a)
	}
	if !routed {
		if _, err := ip("-n", w.Gateway.Name, family, "route", "add", host, "via", via.String()); err != nil {
			return err
		}
	}
	w.addrs[a] = true
	return nil
}

// staleName matches the namespaces New creates and captures the pid that created them.
var staleName = regexp.MustCompile(`^` + regexp.QuoteMeta(Prefix) + `(\d+)-\d+-(sb|gw|in)$`)

// sweepStale deletes, best effort, namespaces that earlier test processes (now gone) left
// behind. Namespaces of live processes, this one included, and names not ours are left alone.
func sweepStale() {
	out, err := ip("netns", "list")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		m := staleName.FindStringSubmatch(fields[0])
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil || !errors.Is(err, os.ErrNotExist) {
			continue // still alive (or unknown): not ours to remove
		}
		_, _ = ip("netns", "del", fields[0])
	}
}
