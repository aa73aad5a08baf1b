package bench

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// maxIdleGateway bounds the idle tunnels the gateways take from one client (their
// connection limits are raised to it); the descriptors a process may hold bound them
// first (MaxIdleTunnels).
const maxIdleGateway = 100_000

// fdReserve is what a process keeps of its descriptors for everything but idle tunnels:
// the tunnels opened first, the upstream's pooled connections, files and listeners.
const fdReserve = 1000

// MaxIdleTunnels is the most idle tunnels IdleTunnels can open via v on this machine: the
// harness holds each one's client end and, for a blind tunnel or squid (which keep an
// upstream connection per client connection), the upstream's end too; an inspected
// tunnel's upstream connection goes back to the gateway's pool after its GET.
func MaxIdleTunnels(v Via) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur <= fdReserve {
		return 0
	}
	perTunnel := uint64(2)
	if v == Gateway || v == GatewayScan {
		perTunnel = 1
	}
	return int(min((lim.Cur-fdReserve)/perTunnel, maxIdleGateway))
}

// MaxIdleSettle bounds IdleTunnels' settle: the gateways keep idle tunnels a minute longer.
const MaxIdleSettle = 5 * time.Minute

// idleWarm tunnels are opened, and kept, before the first reading: pools, caches and the
// runtime's first growth are not any one tunnel's cost.
const idleWarm = 100

// Idle is the proxy process's resident memory before and after n more idle tunnels.
type Idle struct {
	N             int
	Before, After int64 // bytes
	// Collected is the RSS once the process collected its garbage and gave
	// back what it freed, as Before was read (the gateways' process only;
	// zero for squid): what the tunnels hold, without what opening them left
	// to collect (and net/http's pools of buffers that parked tunnels gave
	// back).
	Collected int64
	// Heap, Stack and Goroutines grew by so much per tunnel (the gateways' process only,
	// read after a collection; zero for squid).
	Heap, Stack, Goroutines float64
}

// PerTunnel is the growth per tunnel in KiB.
func (i Idle) PerTunnel() float64 { return float64(i.After-i.Before) / float64(i.N) / 1024 }

// PerTunnelCollected is the growth per tunnel in KiB after a collection; 0 if not read.
func (i Idle) PerTunnelCollected() float64 {
	if i.Collected == 0 {
		return 0
	}
	return float64(i.Collected-i.Before) / float64(i.N) / 1024
}

// IdleTunnels opens n tunnels via v, each through its CONNECT, TLS handshake and one
// small GET over HTTP/1.1, and leaves them idle; it reads the proxy process's RSS
// before (the gateways' process having returned its free memory to the system) and,
// after settle, after them, and closes them all. The gateways' Go runtime collects
// on its own at least every two minutes: a settle longer than that reads what an
// idle gateway comes down to without being told to collect.
func (e *Env) IdleTunnels(v Via, n int, settle time.Duration) (Idle, error) {
	pid := e.proxyPID(v)
	var err error
	if pid == 0 {
		return Idle{}, fmt.Errorf("bench: no process of its own proxies %s (run the gateways as a child)", v)
	}
	if settle > MaxIdleSettle {
		return Idle{}, fmt.Errorf("bench: settle %v: at most %v", settle, MaxIdleSettle)
	}
	if most := MaxIdleTunnels(v); n < 1 || n > most {
		return Idle{}, fmt.Errorf("bench: %d idle tunnels via %s: want 1 to %d (the descriptors this process may hold bound it: ulimit -n)", n, v, most)
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	open := func(k int) error {
		got, err := parallelConns(k, 8, func() (net.Conn, error) { return e.idleTunnel(v) })
		conns = append(conns, got...)
		return err
	}
	if err := open(idleWarm); err != nil {
		return Idle{}, err
	}
	time.Sleep(time.Second)
	var m0 memStats
	if e.child != nil && v != Squid {
		// What earlier measurements freed must not make room for these tunnels.
		if m0, err = e.child.free(); err != nil {
			return Idle{}, err
		}
	}
	before, err := procRSS(pid)
	if err != nil {
		return Idle{}, err
	}
	if err := open(n); err != nil {
		return Idle{}, err
	}
	time.Sleep(settle)
	after, err := procRSS(pid)
	if err != nil {
		return Idle{}, err
	}
	i := Idle{N: n, Before: before, After: after}
	if e.child != nil && v != Squid {
		m1, err := e.child.free()
		if err != nil {
			return Idle{}, err
		}
		per := func(a, b int64) float64 { return float64(b-a) / float64(n) }
		i.Heap, i.Stack, i.Goroutines = per(m0.heap, m1.heap), per(m0.stack, m1.stack), per(m0.goroutines, m1.goroutines)
		if i.Collected, err = procRSS(pid); err != nil {
			return Idle{}, err
		}
	}
	return i, nil
}

// parallelConns runs dial n times, at most par at once, and returns the connections made.
func parallelConns(n, par int, dial func() (net.Conn, error)) ([]net.Conn, error) {
	var mu sync.Mutex
	var out []net.Conn
	var errs []error
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := dial()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			out = append(out, c)
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return out, fmt.Errorf("bench: %d of %d tunnels failed, first: %w", len(errs), n, errs[0])
	}
	return out, nil
}

// idleTunnel opens one tunnel via v and makes one GET in it, by hand, so that nothing
// on the client side holds more than the connection.
func (e *Env) idleTunnel(v Via) (net.Conn, error) {
	proxy, roots := e.ProxyAddr, e.tenantCAs
	auth := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(Tenant+":"+e.token)) + "\r\n"
	port := e.port
	switch v {
	case Tunnel:
		roots, port = e.upRoots, e.tunnelPort
	case Squid:
		proxy, roots, auth = e.SquidAddr, e.squid.roots, ""
	case GatewayScan:
		proxy = e.ScanProxyAddr
	case Direct:
		return nil, errors.New("bench: a direct connection is no tunnel")
	}
	authority := net.JoinHostPort(Domain, strconv.Itoa(port))
	raw, err := net.DialTimeout("tcp", proxy, 10*time.Second)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (net.Conn, error) { raw.Close(); return nil, fmt.Errorf("%s tunnel: %w", v, err) }
	raw.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(raw, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", authority, authority, auth); err != nil {
		return fail(err)
	}
	br := bufio.NewReader(raw)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return fail(err)
	}
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("CONNECT: %s", resp.Status))
	}
	if br.Buffered() > 0 {
		return fail(errors.New("CONNECT: bytes after the 200"))
	}
	tc := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: Domain, NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		return fail(err)
	}
	if _, err := fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", pathSmall, authority); err != nil {
		return fail(err)
	}
	resp, err = http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		return fail(err)
	}
	nb, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || nb != int64(len(smallBody)) {
		return fail(fmt.Errorf("GET: %s, %d bytes, %v", resp.Status, nb, err))
	}
	raw.SetDeadline(time.Time{})
	return tc, nil
}
