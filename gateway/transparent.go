package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/rules"
)

// Reasons of the transparent listeners' refusals.
const (
	// ReasonUnknownSource: the connection's source address belongs to no registered
	// sandbox (a run's sandbox_addr or a configured source network).
	ReasonUnknownSource = "unknown-source"
	// ReasonSNIMissing: a redirected TLS connection named no server: nothing to decide on.
	ReasonSNIMissing = "sni-missing"
)

// Sources tells whose sandbox a source address is. cmd adapts the table that runs
// register their sandbox addresses with (sandboxdns.Table).
type Sources interface {
	LookupSource(addr netip.Addr) (rules.Identity, bool)
}

// SourcesFunc adapts a function to Sources.
type SourcesFunc func(addr netip.Addr) (rules.Identity, bool)

// LookupSource calls f.
func (f SourcesFunc) LookupSource(addr netip.Addr) (rules.Identity, bool) { return f(addr) }

// Transparent serves sandbox connections that the sandbox's network redirects to the
// gateway (nftables or iptables in its namespace): no proxy settings, no
// Proxy-Authorization. The sandbox is identified by its source address; TLS is decided
// by SNI before the handshake and then inspected or tunnelled exactly as after a
// CONNECT; plain HTTP is decided by its Host. The explicit proxy and the transparent
// listeners share one Gateway: the same policy, tunnels, events and Shutdown drain.
type Transparent struct {
	// Gateway is required: it decides and forwards.
	Gateway *Gateway
	// Sources identifies clients by address; nil refuses every connection.
	Sources Sources
	// TLSPort and HTTPPort are the ports the redirected connections were made to,
	// which the policy decides on; zero: 443 and 80.
	TLSPort, HTTPPort int
	// ProbeKey returns the key that proves the gateway's refusals to the doctor in a
	// sandbox of tenant (internal/probetag.KeyFromCA of its CA); nil: no proofs.
	ProbeKey func(tenant string) []byte

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	servers   []*http.Server
	silent    silentConns // plain-HTTP connections that have not sent a whole request yet
	closed    bool
}

func (t *Transparent) tlsPort() int {
	if t.TLSPort > 0 {
		return t.TLSPort
	}
	return 443
}

func (t *Transparent) httpPort() int {
	if t.HTTPPort > 0 {
		return t.HTTPPort
	}
	return 80
}

func (t *Transparent) lookup(remote string) (rules.Identity, bool) {
	if t.Sources == nil {
		return rules.Identity{}, false
	}
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return rules.Identity{}, false
	}
	return t.Sources.LookupSource(ap.Addr().Unmap().WithZone(""))
}

func (t *Transparent) addListener(l net.Listener) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	if t.listeners == nil {
		t.listeners = map[net.Listener]struct{}{}
	}
	t.listeners[l] = struct{}{}
	return true
}

// Shutdown stops accepting redirected connections and closes the plain-HTTP
// listener's idle connections; the tunnels already open are the Gateway's, drained by
// its Shutdown.
func (t *Transparent) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	t.closed = true
	ls, srvs := t.listeners, t.servers
	t.listeners, t.servers = nil, nil
	t.mu.Unlock()
	for l := range ls {
		l.Close()
	}
	t.silent.closeAll()
	var err error
	for _, s := range srvs {
		err = errors.Join(err, s.Shutdown(ctx))
	}
	return err
}

// ServeTLS accepts redirected TLS connections on l until Shutdown.
func (t *Transparent) ServeTLS(l net.Listener) error {
	if !t.addListener(l) {
		l.Close()
		return nil
	}
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			t.mu.Lock()
			closed := t.closed
			t.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		go t.handleTLS(c)
	}
}

// handleTLS decides one redirected TLS connection on its ClientHello.
func (t *Transparent) handleTLS(c net.Conn) {
	g := t.Gateway
	port := t.tlsPort()
	// What the CONNECT path keeps of a request: its method, authority and client.
	r := (&http.Request{Method: http.MethodConnect, Header: http.Header{}, URL: &url.URL{},
		RemoteAddr: c.RemoteAddr().String(), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}).WithContext(context.Background())
	id, known := t.lookup(r.RemoteAddr)

	c.SetReadDeadline(time.Now().Add(g.handshakeTimeout()))
	hello, replay, err := peekClientHello(c)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		g.logger().Debug("transparent: no ClientHello", logClient, r.RemoteAddr, logErr, err)
		c.Close()
		return
	}
	client := &prefixConn{Conn: c, r: io.MultiReader(bytes.NewReader(replay), c)}
	if !known {
		g.record(r.Context(), r, refusal{reason: ReasonUnknownSource, host: hello.ServerName, port: port})
		c.Close()
		return
	}
	if hello.ServerName == "" {
		// No name to decide on, none to sign for: an address is not an authority a
		// policy can hold the connection to.
		g.record(r.Context(), r, refusal{id: id, reason: ReasonSNIMissing, port: port})
		c.Close()
		return
	}
	host, err := rules.NormalizeHost(hello.ServerName)
	if err != nil {
		g.record(r.Context(), r, refusal{id: id, reason: rules.ReasonBadHost, host: hello.ServerName, port: port})
		c.Close()
		return
	}
	r.Host = net.JoinHostPort(host, strconv.Itoa(port))
	r.URL.Host = r.Host
	d := g.Policy.Decide(rules.Query{Identity: id, Host: host, Port: port, Stage: rules.StageConnect})
	f := policyRefusal(id, d, host, port, "")
	if d.Action == rules.Deny {
		d, f = g.reviewTLS(r, id, d, host, port) // shadow mode, or a hold (hold.go)
	}
	switch d.Action {
	case rules.Passthrough:
		up, err := g.Dialer.Dial(r.Context(), guard.Target{Host: host, Port: port, Allow: d.AllowAddresses})
		if err != nil {
			t.refuseTLS(r, client, id, host, port, dialRefusal(id, err, host, port, ""))
			return
		}
		g.passthroughConn(r, client, up, id, d, host, port)
	case rules.Inspect:
		if g.Leaf == nil {
			g.record(r.Context(), r, refusal{id: id, reason: ReasonCAUnavailable, host: host, port: port})
			c.Close()
			return
		}
		leaf, err := g.Leaf(id.Tenant, host)
		if err != nil {
			g.logger().Error("leaf certificate", logTenant, id.Tenant, logHost, host, logErr, err)
			g.record(r.Context(), r, refusal{id: id, reason: ReasonCAUnavailable, host: host, port: port})
			c.Close()
			return
		}
		g.inspectConn(r, client, id, host, port, leaf)
	default:
		t.refuseTLS(r, client, id, host, port, f)
	}
}

// refuseTLS answers a refused TLS connection the way a refused CONNECT is answered:
// it completes the handshake with the tenant CA's leaf for the SNI (the client trusts
// it: the refusal provably comes from the gateway), answers the first request with the
// refusal and closes. Without a leaf, or without a request, it records the refusal and
// closes.
func (t *Transparent) refuseTLS(r *http.Request, client net.Conn, id rules.Identity, host string, port int, f refusal) {
	g := t.Gateway
	var leaf *tls.Certificate
	if g.Leaf != nil {
		leaf, _ = g.Leaf(id.Tenant, host)
	}
	if leaf == nil {
		g.record(r.Context(), r, f)
		client.Close()
		return
	}
	// One answer, then the end: no ticket to resume with.
	cfg := g.sandboxTLS()
	cfg.NextProtos = []string{"http/1.1"}
	cfg.Certificates = []tls.Certificate{*leaf}
	cfg.SessionTicketsDisabled = true
	tlsConn := tls.Server(client, cfg)
	defer tlsConn.Close()
	ctx, cancel := context.WithTimeout(r.Context(), g.handshakeTimeout())
	err := tlsConn.HandshakeContext(ctx)
	cancel()
	if err != nil {
		g.record(r.Context(), r, f)
		return
	}
	var answered atomic.Bool
	srv := &http.Server{
		ReadHeaderTimeout: g.handshakeTimeout(),
		IdleTimeout:       g.handshakeTimeout(),
		ErrorLog:          discardLog,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			answered.Store(true)
			req = req.WithContext(withProbeKey(req.Context(), t.probeKey(id.Tenant)))
			req.RemoteAddr = r.RemoteAddr
			f.path = req.URL.Path
			g.refuse(w, req, f) // Connection: close: one answer, then the end
		}),
	}
	// A client that never sends a request must not hold the connection.
	stop := time.AfterFunc(2*g.handshakeTimeout(), func() { srv.Close() })
	defer stop.Stop()
	l := newOneConnListener(tlsConn)
	srv.Serve(l)
	l.wait()
	if !answered.Load() {
		g.record(r.Context(), r, f)
	}
}

// ServeHTTP accepts redirected plain-HTTP connections on l until Shutdown.
func (t *Transparent) ServeHTTP(l net.Listener) error {
	srv := &http.Server{
		Handler:           http.HandlerFunc(t.plain),
		ReadHeaderTimeout: 15 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          discardLog,
		ConnState:         t.silent.track,
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		l.Close()
		return nil
	}
	t.servers = append(t.servers, srv)
	t.mu.Unlock()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// plain takes a redirected origin-form request's Host as its authority.
func (t *Transparent) plain(w http.ResponseWriter, r *http.Request) {
	g := t.Gateway
	port := t.httpPort()
	id, ok := t.lookup(r.RemoteAddr)
	r = r.WithContext(withProbeKey(r.Context(), t.probeKey(id.Tenant)))
	if !ok {
		g.refuse(w, r, refusal{status: http.StatusForbidden, reason: ReasonUnknownSource, port: port,
			msg: "this address is no registered sandbox: give the run its sandbox_addr"})
		return
	}
	if r.Method == http.MethodConnect || (r.URL.IsAbs() && r.URL.Scheme != "http") {
		g.refuse(w, r, refusal{id: id, status: http.StatusBadRequest, reason: ReasonNotProxyRequest, port: port,
			msg: "this port takes plain HTTP requests redirected from the sandbox; HTTPS goes to port 443"})
		return
	}
	rawHost, hostPort := splitHostPortDefault(r.Host, port)
	host, err := rules.NormalizeHost(rawHost)
	if r.Host == "" || err != nil {
		g.refuse(w, r, refusal{id: id, status: http.StatusBadRequest, reason: rules.ReasonBadHost,
			host: rawHost, port: port, msg: "the request has no valid Host"})
		return
	}
	if hostPort != port {
		// The connection was made to port 80: a Host naming another port would
		// reach a port the sandbox never connected to.
		g.refuse(w, r, refusal{id: id, status: http.StatusForbidden, reason: ReasonDomainFronting,
			host: host, port: hostPort, path: r.URL.Path, msg: "the Host names another port than the connection's"})
		return
	}
	r.URL.Scheme = "http"
	r.URL.Host = net.JoinHostPort(host, strconv.Itoa(port))
	if host == InternalHost {
		g.internal(w, r, id) // the gateway's own name: filing access requests
		return
	}
	g.plain(w, r, id)
}

func (t *Transparent) probeKey(tenant string) []byte {
	if t.ProbeKey == nil || tenant == "" {
		return nil
	}
	return t.ProbeKey(tenant)
}
