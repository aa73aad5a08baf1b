package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/rules"
)

// plain forwards an absolute-form http:// request after the policy allows it.
func (g *Gateway) plain(w http.ResponseWriter, r *http.Request, id rules.Identity) {
	rawHost, port := splitHostPortDefault(r.URL.Host, 80)
	host, err := rules.NormalizeHost(rawHost)
	if err != nil || port <= 0 {
		g.refuse(w, r, refusal{id: id, status: http.StatusBadRequest, reason: rules.ReasonBadHost,
			host: rawHost, port: port, msg: "the request URL has no valid host"})
		return
	}
	ws, ok := upgradeKind(r)
	if !ok {
		g.refuse(w, r, refusal{id: id, status: http.StatusForbidden, reason: ReasonUpgradeNotAllowed,
			host: host, port: port, path: r.URL.Path, msg: "only WebSocket upgrades are supported"})
		return
	}
	r, hold, ok := g.admitBody(w, r, id, host, port)
	if !ok {
		return
	}
	defer hold.release()
	d := g.decideRequest(id, host, port, r, ws)
	if d.Action != rules.Allow && !bodyTimedOut(r) {
		// Shadow mode, or a hold for review (hold.go); else refused.
		if d = g.reviewRequest(w, r, id, d, host, port, ws); d.Action != rules.Allow {
			return
		}
	}
	switch {
	case bodyTimedOut(r):
		g.refuseBodyTimeout(w, r, id, host, port)
	case !g.scanHost(w, r, id, d, rawHost, host, port):
		// refused: the host's labels carry data
	default:
		if keep, ok := g.scan(w, r, id, host, port); ok {
			g.forward(w, r, id, d, "http", host, port, keep)
		}
	}
}

// dialKey carries what the transport's dialer must know about the request
// being forwarded: the checked host and what it may reach.
type dialKey struct{}

type dialInfo struct {
	host  string
	port  int
	allow []netip.Prefix
}

// forward sends an allowed request upstream to scheme://host:port.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, id rules.Identity, d rules.Decision, scheme, host string, port int, keep string) {
	// Real secrets go in last, after the scan saw only phantoms.
	inj, ok := g.credentials(w, r, id, host, port)
	if !ok {
		return
	}
	allow := d.AllowAddresses
	authority := net.JoinHostPort(host, strconv.Itoa(port))
	ws, _ := upgradeKind(r)
	if bodilessH1(r, ws) {
		g.forwardH1(w, r, id, d, scheme, host, port, authority, inj, keep) // upstream1.go
		return
	}
	info := &dialInfo{host: host, port: port, allow: allow}
	// An allowed WebSocket is tracked as a tunnel, scanned message by
	// message and the upstream's messages scrubbed of real secrets
	// (websocket.go).
	if ws {
		ww := g.webSocketWriter(w, r, id, host, port, inj)
		defer ww.untrack()
		w = ww
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = scheme
			pr.Out.URL.Host = authority
			pr.Out.Host = upstreamHost(r.Host, host, authority)
			// Credentials for the gateway never travel on, nor do the
			// headers that override the path (override.go).
			for _, h := range strippedHeaders {
				delete(pr.Out.Header, h)
			}
			if ws && (g.Scanner != nil || inj.hasSwaps()) {
				// No compression is negotiated: every frame stays readable.
				pr.Out.Header.Del("Sec-WebSocket-Extensions")
			}
			pr.Out = pr.Out.WithContext(context.WithValue(pr.Out.Context(), dialKey{}, info))
			inj.apply(pr.Out)
		},
		ModifyResponse: g.observed(id, d, host, port, r.Method, keep, g.modifyResponse(inj)),
		Transport:      g.transport(id.Tenant, allow, r.ProtoMajor >= 2),
		// Without a pool, ReverseProxy allocates (and zeroes) 32 KiB per request.
		BufferPool: copyBuffers,
		// FlushInterval stays 0: bodies of known length are written in
		// full records; ReverseProxy flushes at once for event streams and
		// bodies of unknown length, so long polls are not held back.
		ErrorLog: discardLog,
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			if errors.Is(err, errStreamBlocked) {
				return // the scan refused the stream and answers it
			}
			if errors.Is(err, context.Canceled) {
				panic(http.ErrAbortHandler) // the client left: no answer at all (see forwardH1)
			}
			if bodyTimedOut(r) {
				g.refuseBodyTimeout(w, r, id, host, port)
				return
			}
			g.refuse(w, r, dialRefusal(id, err, host, port, r.URL.Path))
		},
	}
	rp.ServeHTTP(w, r)
}

// copyBuffers lends ReverseProxy the buffers it copies response bodies with.
var copyBuffers = &bufferPool{}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if buf, ok := b.p.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// dialRefusal turns an upstream failure into the answer the client gets.
func dialRefusal(id rules.Identity, err error, host string, port int, path string) refusal {
	f := refusal{id: id, host: host, port: port, path: path}
	var tlsErr *tls.CertificateVerificationError
	switch {
	case errors.Is(err, guard.ErrAddressDenied):
		f.status, f.reason = http.StatusForbidden, ReasonAddressNotAllowed
		f.msg = "the host resolves to an address the gateway never dials (loopback, private, metadata or its own)"
	case errors.Is(err, phantom.ErrUnscrubbable):
		f.status, f.reason = http.StatusBadGateway, ReasonResponseUnscrubbable
		f.msg = "the upstream answered in an encoding the gateway cannot scrub of credentials; nothing of it was passed on"
	case isTimeout(err) || errors.Is(err, context.DeadlineExceeded):
		f.status, f.reason = http.StatusGatewayTimeout, ReasonUpstreamTimeout
		f.msg = "the upstream did not connect or answer in time: " + shortErr(err)
	case errors.As(err, &tlsErr):
		f.status, f.reason = http.StatusBadGateway, ReasonUpstreamTLS
		f.msg = "the upstream's certificate did not verify: " + tlsErr.Err.Error()
	default:
		f.status, f.reason = http.StatusBadGateway, ReasonUpstreamUnreachable
		f.msg = "could not reach the upstream: " + shortErr(err)
	}
	return f
}

// shortErr keeps the last, most specific part of an error chain.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}

// transport returns the tenant's upstream transport. Transports are kept per
// tenant and dial allowance, so that no pooled connection crosses tenants or
// reaches an address the request's own entry did not open.
//
// For what does not take the HTTP/1.1 path of bodiless requests
// (upstream1.go), the upstream protocol follows the client's: an HTTP/2
// stream goes on over HTTP/2 where the upstream offers it (gRPC needs it end
// to end), an HTTP/1.1 request over HTTP/1.1 on a kept-alive connection of
// its own.
// Multiplexing HTTP/1.1 clients onto one HTTP/2 connection saved upstream
// connections but cost CPU on both ends: a 1 MiB upload through the gateway
// went from 380 to 530 MB/s and from 2.0 to 1.4 ms of gateway CPU over
// HTTP/1.1, small GETs did not change measurably (make bench, docs/http2.md).
func (g *Gateway) transport(tenant string, allow []netip.Prefix, h2 bool) *http.Transport {
	key := tenant + "|" + allowKey(allow) // upstream1.go
	if h2 {
		key += "|h2"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.transports[key]; ok {
		return t
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(h2)
	t := &http.Transport{
		Proxy: nil, // never follow HTTPS_PROXY around the guard
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			info, _ := ctx.Value(dialKey{}).(*dialInfo)
			if info == nil {
				return nil, errors.New("gateway: dial without a checked target")
			}
			ctx, cancel := context.WithTimeout(ctx, g.upstreamConnectTimeout())
			defer cancel()
			return g.Dialer.Dial(ctx, guard.Target{Host: info.host, Port: info.port, Allow: info.allow})
		},
		TLSClientConfig:       &tls.Config{RootCAs: g.RootCAs, MinVersion: tls.VersionTLS12},
		Protocols:             &protocols,
		HTTP2:                 upstreamHTTP2(), // h2.go
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: g.upstreamHeaderTimeout(),
	}
	if g.transports == nil {
		g.transports = make(map[string]*http.Transport)
	}
	g.transports[key] = t
	return t
}

// SetRootCAs replaces the roots that verify upstream TLS while the gateway
// serves (a config reload). It forgets the upstream transports and the
// HTTP/1.1 pool (upstream1.go), so that the next request dials afresh and
// verifies with p. Their idle connections are closed; requests already
// under way finish on theirs, which then close (or, at worst, idle out after
// IdleConnTimeout on the forgotten transport). It is also how a change of
// the dialer's static hosts reaches pooled connections.
// nil: the system roots.
func (g *Gateway) SetRootCAs(p *x509.CertPool) {
	g.mu.Lock()
	g.RootCAs = p
	old, oldH1 := g.transports, g.h1.Swap(nil)
	g.transports = nil
	g.mu.Unlock()
	for _, t := range old {
		t.CloseIdleConnections()
	}
	if oldH1 != nil {
		oldH1.close(true)
	}
}
