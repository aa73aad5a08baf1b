package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"

	"github.com/sluice-egress/sluice/rules"
)

// refuseConnect refuses a CONNECT the policy denied. With RefuseInTLS the
// refusal is answered inside the tunnel the client asked for: most clients
// show nothing of a 403 to CONNECT but "tunnel failed", while a 403 to
// their own request, with its body, reaches the agent. The gateway then
// completes the TLS handshake with a leaf from the tenant CA (which the
// sandbox trusts for inspected hosts) and answers the first request with
// the refusal; nothing is dialled. A passthrough host never gets a tenant
// leaf: its clients expect the real certificate, so they get the plain 403.
// f is the refusal (policyRefusal's, with method CONNECT).
func (g *Gateway) refuseConnect(w http.ResponseWriter, r *http.Request, id rules.Identity, d rules.Decision, host string, port int, f refusal) {
	if !g.RefuseInTLS || g.Leaf == nil || d.PassthroughHost || !policyReasons[d.Reason] && d.Reason != rules.ReasonRunEnded {
		g.refuse(w, r, f)
		return
	}
	inc := f.incident
	if inc == "" {
		inc, _ = g.record(r.Context(), r, f)
	}
	g.serveTLS(w, r, id, host, port, inc, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Connection", "close")
		writeRefusalFor(w, req, f, inc)
	}))
}

// serveTLS answers the CONNECT with 200, completes the client's TLS with a
// leaf for host from the tenant CA and serves h on the connection. It
// dials nothing: h answers every request itself. When the leaf cannot be
// had, the client gets a plain refusal instead (with incident inc, when
// one was recorded already).
func (g *Gateway) serveTLS(w http.ResponseWriter, r *http.Request, id rules.Identity, host string, port int, inc string, h http.Handler) {
	leaf, err := g.Leaf(id.Tenant, host)
	if err != nil {
		g.logger().Error("leaf certificate", logTenant, id.Tenant, logHost, host, logErr, err)
		writeRefusalFor(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonCAUnavailable,
			host: host, port: port, msg: "the tenant CA could not sign for this host"}, inc)
		return
	}
	client, err := hijack(w)
	if err != nil {
		g.logger().Warn("hijack failed", logHost, host, logErr, err)
		return
	}
	cfg := g.sandboxTLS()
	cfg.NextProtos = []string{"http/1.1"}
	cfg.GetCertificate = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if !sniMatches(hello.ServerName, host) {
			return nil, errors.New("SNI does not match the CONNECT host")
		}
		return leaf, nil
	}
	tlsConn := tls.Server(client, cfg)
	// Tracked as refused: run end, reload and shutdown close it like any
	// tunnel, and a grant that now lets the host through closes it too.
	t := g.track(connectQuery(id, host, port), rules.Deny, tlsConn)
	if t == nil {
		return
	}
	defer g.untrack(t)
	ctx, cancel := context.WithTimeout(r.Context(), g.handshakeTimeout())
	err = tlsConn.HandshakeContext(ctx)
	cancel()
	if err != nil {
		// A client that does not trust the tenant CA ends here; the
		// refusal was recorded before.
		g.logger().Debug("refusal handshake failed", logTenant, id.Tenant, logHost, host, logErr, err)
		return
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			req.RemoteAddr = r.RemoteAddr
			h.ServeHTTP(w, req)
		}),
		ReadHeaderTimeout: g.handshakeTimeout(),
		IdleTimeout:       g.handshakeTimeout(),
		ErrorLog:          discardLog,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithoutCancel(r.Context())
		},
	}
	t.setServer(srv)
	l := newOneConnListener(tlsConn)
	srv.Serve(l)
	l.wait()
}
