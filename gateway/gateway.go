// Package gateway is Sluice's explicit proxy: it identifies the client, asks the
// policy about every CONNECT and every request inside an opened tunnel, opens
// allowed HTTPS with the tenant's CA and dials upstream only through the guard.
package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
)

// Policy identifies clients and decides what they may reach. A Decision
// carries all the gateway acts on, the addresses it may dial included, so a
// reloading wrapper may swap engines underneath at any moment. *rules.Engine
// implements it.
type Policy interface {
	Identify(user, token string) (rules.Identity, error)
	Decide(q rules.Query) rules.Decision
}

// Dialer opens upstream connections after checking the resolved address.
// *guard.Dialer implements it.
type Dialer interface {
	Dial(ctx context.Context, t guard.Target) (net.Conn, error)
}

var (
	_ Policy = (*rules.Engine)(nil)
	_ Dialer = (*guard.Dialer)(nil)
)

// Log attribute keys, so that every line spells them the same way.
const (
	logTenant = "tenant"
	logClass  = "class"
	logHost   = "host"
	logPort   = "port"
	logReason = "reason"
	logClient = "client"
	logErr    = "err"
)

// Gateway is the proxy handler. Serve it with Serve, or as an http.Handler on
// a server whose connections it may hijack.
type Gateway struct {
	// Policy is required: without it every request is refused (fail closed).
	Policy Policy
	// Leaf returns the certificate for host signed by tenant's CA. Required
	// for inspection; nil refuses every CONNECT that would be inspected.
	Leaf func(tenant, host string) (*tls.Certificate, error)
	// Dialer is required: it is the only way upstream.
	Dialer Dialer
	// RootCAs verifies upstream TLS. nil: the system roots. Set it before
	// serving; while serving, replace it only with SetRootCAs.
	RootCAs *x509.CertPool
	// Events receives refusals. nil: discarded.
	Events EventSink
	// Scanner inspects every request before it is forwarded (secrets,
	// canaries, exfiltration links). nil: requests are not scanned.
	Scanner Scanner
	// Credentials holds the runs' phantom credentials: the real secret
	// replaces its phantom in requests to its bound hosts, after the scan.
	// nil: none.
	Credentials Credentials
	// ScanMemory bounds the request bytes held for scanning at once, across
	// all requests and WebSocket messages: a body is read into memory to be
	// scanned, so without a bound many large uploads at once could exhaust
	// the gateway. A tenant that already holds some may grow only to a fair
	// share (budget.go). A request that cannot get its share within ScanWait
	// is refused (503, scan-busy). Zero: unbounded.
	ScanMemory int64
	// ScanBodyLimit is the scanner's max_body_bytes: a body reserves at most
	// this plus one byte (what the scanner reads), and a larger declared
	// Content-Length is refused at once (see ForwardOversize). Zero:
	// scanner.DefaultMaxBodyBytes. Set it before serving; while serving,
	// change it only with SetScanBodyLimit.
	ScanBodyLimit int64
	// ScanWait is how long a request may wait for scan memory. Zero: 10s.
	ScanWait time.Duration
	// MaxWebSocketMessage is the largest WebSocket message, counted with
	// its framing, held for a scan (the scanner's body limit): a larger one
	// closes the WebSocket, never forwarded in part. Zero: 1 MiB. Set it
	// before serving; while serving, change it only with
	// SetMaxWebSocketMessage.
	MaxWebSocketMessage int64
	// OnScan, if set, is told how long each request's scan took (metrics).
	OnScan func(d time.Duration)
	// Logger nil: slog.Default().
	Logger *slog.Logger
	// HandshakeTimeout bounds the client's TLS handshake inside a tunnel. Zero: 10s.
	HandshakeTimeout time.Duration
	// SandboxCurves are the key exchanges the TLS the gateway terminates for
	// sandboxes (inspected tunnels, refusals and sluice.internal inside TLS)
	// may agree on, as tls.Config.CurvePreferences: crypto/tls takes a
	// post-quantum one whenever the client offers it, so leaving
	// tls.X25519MLKEM768 out is what makes the handshake classical. nil: Go's
	// defaults (X25519MLKEM768 first). Upstream TLS keeps Go's defaults
	// whatever this says.
	SandboxCurves []tls.CurveID
	// IdleTimeout closes a keep-alive client connection (on the proxy port
	// or an inspected tunnel) idle between requests for this long. Zero: 2m.
	IdleTimeout time.Duration
	// Limits bound time, sizes and connections; the zero value holds the
	// documented defaults.
	Limits Limits
	// ForwardOversize is the policy's on_oversize: false (block) answers a
	// request whose declared Content-Length is over ScanBodyLimit at once
	// with 413 (body-too-large), without reading it; true lets the scanner
	// read and scan the first ScanBodyLimit bytes and forward the rest.
	// While serving, change it only with SetScanBodyLimit.
	ForwardOversize bool
	// HTTP2 limits clients that speak HTTP/2 inside inspected tunnels
	// (h2.go). Zero: h2 offered, with safe limits.
	HTTP2 HTTP2
	// RefuseInTLS answers a refused CONNECT inside the TLS the client asked
	// for, with a tenant leaf, so that the client shows the refusal's body
	// (refusal_tls.go). false: a plain 403 to the CONNECT.
	RefuseInTLS bool
	// Desk takes the access requests sandboxes file at InternalHost
	// (internal.go), and those of held refusals (hold.go). nil: that host
	// answers 503, and nothing is held.
	Desk Desk
	// MaxHolds bounds the refusals held open for review at once (each run
	// holds at most 16). Zero: 256.
	MaxHolds int
	// Observer is told of every request forwarded (observe.go). nil: none.
	Observer Observer

	holds holdSet // refusals held for review (hold.go)

	tickets       ticketSecrets // TLS session resumption in inspected tunnels (tickets.go)
	parkedTunnels atomic.Int64  // idle HTTP/1.1 tunnels parked (park.go)

	scanMemOnce sync.Once
	budget      *scanBudget
	conns       connCounts
	silent      silentConns // proxy connections that have not sent a whole request yet (serve.go)

	mu         sync.Mutex
	transports map[string]*http.Transport // by tenant and dial allowances; RootCAs, MaxWebSocketMessage, ScanBodyLimit and ForwardOversize are read under mu
	h1         atomic.Pointer[h1Pool]     // upstream HTTP/1.1 connections for bodiless requests (upstream1.go); replaced under mu
	tunnels    map[*tunnel]struct{}
	draining   bool
	server     *http.Server
}

func (g *Gateway) logger() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.Default()
}

func (g *Gateway) events() EventSink {
	if g.Events != nil {
		return g.Events
	}
	return discardSink{}
}

func (g *Gateway) handshakeTimeout() time.Duration {
	if g.HandshakeTimeout > 0 {
		return g.HandshakeTimeout
	}
	return 10 * time.Second
}

// sandboxTLS returns a TLS server config for a sandbox's connection with the
// settings every such server shares: TLS 1.2 at least, and the key exchanges
// of SandboxCurves.
func (g *Gateway) sandboxTLS() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, CurvePreferences: g.SandboxCurves}
}

func (g *Gateway) idleTimeout() time.Duration {
	if g.IdleTimeout > 0 {
		return g.IdleTimeout
	}
	return 2 * time.Minute
}

// ServeHTTP handles CONNECT and absolute-form HTTP requests from clients.
func (g *Gateway) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w := &guardedWriter{ResponseWriter: rw}
	var id rules.Identity
	defer g.recoverRequest(w, r, &id)
	if !g.checkRequestLimits(w, r, id) {
		return
	}
	id, ok := g.identify(w, r)
	if !ok || !g.claimConn(w, r, id) {
		return
	}
	switch {
	case r.Method == http.MethodConnect && isInternal(r.Host):
		_, port := splitHostPortDefault(r.Host, -1)
		g.internalTLS(w, r, id, port)
	case r.URL.IsAbs() && r.URL.Scheme == "http" && isInternal(r.URL.Host):
		g.internal(w, r, id)
	case r.Method == http.MethodConnect:
		g.connect(w, r, id)
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		g.plain(w, r, id)
	default:
		// An origin-form request reached the proxy port, or https:// in
		// absolute form: clients must use CONNECT for TLS.
		g.refuse(w, r, refusal{id: id, status: http.StatusBadRequest, reason: ReasonNotProxyRequest,
			msg: "send requests through the proxy (HTTP_PROXY/HTTPS_PROXY); HTTPS goes through CONNECT"})
	}
}

// identify reads Proxy-Authorization. On failure it answers 407 itself.
func (g *Gateway) identify(w http.ResponseWriter, r *http.Request) (rules.Identity, bool) {
	user, token, ok := proxyCredentials(r.Header.Get("Proxy-Authorization"))
	var id rules.Identity
	var err error
	if ok && g.Policy != nil {
		id, err = g.Policy.Identify(user, token)
	}
	if ok && errors.Is(err, rules.ErrRunEnded) {
		g.runEnded(w, r, id)
		return rules.Identity{}, false
	}
	if ok && errors.Is(err, rules.ErrClassNotForToken) {
		g.refuseIdentity(w, r, id, rules.ReasonClassNotAllowed)
		return rules.Identity{}, false
	}
	if !ok || g.Policy == nil || err != nil {
		w.Header().Set("Proxy-Authenticate", `Basic realm="sluice"`)
		g.refuse(w, r, refusal{status: http.StatusProxyAuthRequired, reason: ReasonAuthRequired,
			msg: "proxy credentials missing or wrong: use http://TENANT:TOKEN@gateway as the proxy URL"})
		return rules.Identity{}, false
	}
	return id, true
}

// proxyCredentials decodes "Basic base64(user:token)".
func proxyCredentials(h string) (user, token string, ok bool) {
	scheme, payload, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
	if err != nil {
		return "", "", false
	}
	user, token, ok = strings.Cut(string(raw), ":")
	if !ok || user == "" || token == "" {
		return "", "", false
	}
	return user, token, true
}

// refusal describes a refused request for refuse.
type refusal struct {
	id     rules.Identity
	status int
	reason string
	msg    string
	host   string
	port   int
	path   string
	// method is what was refused when it is not the request's own (CONNECT).
	method string
	// found names the rule that found a secret and where ("github-pat in
	// json:$.note"), never the value.
	found string
	// action is the incident's action; "" for "block".
	action string
	// incident, when set, was recorded already (a hold's): refuse records
	// nothing more.
	incident string
}

// refuse answers with the status and Sluice-Reason, records the event and
// logs it. The body is one line of text.
// A refusal whose incident could not be recorded is still sent, without an
// incident id.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, f refusal) {
	setProbeProof(w, r, f.reason)
	inc := f.incident
	if inc == "" {
		inc, _ = g.record(r.Context(), r, f)
	}
	writeRefusalFor(w, r, f, inc)
}

// writeRefusal is the one place a refusal is written: the status, the
// Sluice-Reason and (when one was recorded) Sluice-Incident headers, and a
// body of one line of text.
func writeRefusal(w http.ResponseWriter, status int, reason, incidentID, msg string) {
	w.Header().Set("Sluice-Reason", reason)
	if incidentID != "" {
		w.Header().Set("Sluice-Incident", incidentID)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if refusalCloses(status) {
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, "sluice: %s: %s\n", reason, msg)
}

// refusalCloses reports whether a refusal with status ends the connection:
// refused inside a tunnel, the client must not reuse a connection whose peer
// we just refused, or whose body was left unread.
func refusalCloses(status int) bool {
	switch status {
	case http.StatusForbidden, http.StatusBadGateway,
		http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusGatewayTimeout,
		http.StatusServiceUnavailable, http.StatusRequestURITooLong, http.StatusRequestHeaderFieldsTooLarge:
		return true
	}
	return false
}

// record emits the event for a refusal and logs it; it returns the incident
// id, and the sink's error (logged here) when it could not be recorded.
func (g *Gateway) record(ctx context.Context, r *http.Request, f refusal) (string, error) {
	host, port := f.host, f.port
	if host == "" && r != nil {
		host, port = splitHostPortDefault(r.Host, 0)
	}
	path := f.path
	method := ""
	if r != nil {
		method = r.Method
		if path == "" && r.Method != http.MethodConnect && r.URL != nil {
			path = r.URL.Path
		}
	}
	// A refused request was not scanned: its host (a malformed one above
	// all) and path are kept as evidence without what looks like a token.
	host = g.evidenceHost(ctx, f.id.Tenant, host)
	e := incident.Incident{
		Time: time.Now(), Tenant: f.id.Tenant, Class: f.id.Class, Run: f.id.Run,
		Kind: "deny", Reason: f.reason, Action: cmp.Or(f.action, "block"),
		Host: host, Port: port, Method: method, Path: g.evidencePath(ctx, f.id.Tenant, path),
	}
	if r != nil {
		e.Client = r.RemoteAddr
		e.Probe = IsProbe(r)
	}
	g.logger().Info("refused", logTenant, e.Tenant, logClass, e.Class, logHost, host, logPort, port,
		"method", method, logReason, f.reason, logClient, e.Client)
	inc, err := g.events().Emit(ctx, e)
	if err != nil {
		g.logger().Error("refusal not recorded", logTenant, e.Tenant, logHost, host, logReason, f.reason, logErr, err)
	}
	return inc, err
}

// splitHostPortDefault splits "host:port"; without a port it returns def.
func splitHostPortDefault(hostport string, def int) (string, int) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return strings.Trim(hostport, "[]"), def
	}
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n > 65535 {
		return host, -1
	}
	return host, n
}

// deniedStatus maps a policy reason to the refusal sent to the client.
func policyRefusal(id rules.Identity, d rules.Decision, host string, port int, path string) refusal {
	msg := "not in the allowlist of tenant " + strconv.Quote(id.Tenant) + ", class " + strconv.Quote(id.Class) +
		"; ask for access or add an allow entry"
	switch d.Reason {
	case rules.ReasonRunEnded:
		msg = "run " + strconv.Quote(id.Run) + " has ended: its token opens nothing any more; start a new run"
	case rules.ReasonClassNotAllowed:
		msg = "the token of tenant " + strconv.Quote(id.Tenant) + " may not select class " + strconv.Quote(id.Class) +
			": create a run of that class (POST /api/runs) and use its token, or list the class in the tenant's token_classes"
	}
	return refusal{id: id, status: http.StatusForbidden, reason: d.Reason, host: host, port: port, path: path, msg: msg}
}
