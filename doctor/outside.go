package doctor

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/sluice-egress/sluice/internal/probetag"
)

// directTargets are host:port pairs a connection around the proxy must not
// reach: the control host's real address, the bridge gateway, the metadata
// service and --direct.
func (d Doctor) directTargets() []string {
	var ts []string
	if d.Control != nil {
		port := d.Control.Port()
		if port == "" {
			port = "443"
		}
		ts = append(ts, net.JoinHostPort(d.Control.Hostname(), port))
	}
	for _, gw := range d.bridgeGateways() {
		ts = append(ts, net.JoinHostPort(gw.String(), "443"), net.JoinHostPort(gw.String(), "80"))
	}
	md := d.Metadata
	if md == "" {
		md = "169.254.169.254"
	}
	ts = append(ts, net.JoinHostPort(md, "80"))
	return append(ts, d.Direct...)
}

// outsideProbes try every way out to the Outside addresses that does not go through
// a proxy: TCP 443 and 80 (which must fail, or land at the gateway and be refused
// there), DNS on UDP 53 and QUIC on UDP 443 (which must get no answer).
func (d Doctor) outsideProbes(ctx context.Context) []Probe {
	var fns []func() Probe
	for _, a := range d.outside() {
		fns = append(fns,
			func() Probe { return d.direct(ctx, net.JoinHostPort(a, "443"), false) },
			func() Probe { return d.direct(ctx, net.JoinHostPort(a, "80"), false) },
			func() Probe { return d.udpDNS(ctx, a) },
			func() Probe { return d.udpQUIC(ctx, a) },
		)
	}
	out := make([]Probe, len(fns))
	var wg sync.WaitGroup
	for i, f := range fns {
		wg.Go(func() { out[i] = f() })
	}
	wg.Wait()
	return out
}

// direct opens a TCP connection without the proxy. It must fail or, where the
// sandbox's network redirects it, land at the gateway and be refused there; a
// name that does not resolve proves nothing by itself.
func (d Doctor) direct(ctx context.Context, hostport string, sluiceDNS bool) Probe {
	p := Probe{Name: "no direct route " + hostport}
	ctx, cancel := context.WithTimeout(ctx, min(d.timeout(), 3*time.Second))
	defer cancel()
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		p.Detail = err.Error()
		return p
	}
	addrs := []string{host}
	if _, err := netip.ParseAddr(host); err != nil {
		if d.Transparent && d.Control != nil && host == d.Control.Hostname() {
			p.Verdict = Info
			p.Detail = "in a transparent sandbox the control host resolves to the gateway: the outside probes stand for it"
			return p
		}
		addrs, err = net.DefaultResolver.LookupHost(ctx, host)
		if err != nil || len(addrs) == 0 {
			if sluiceDNS {
				p.Verdict = Info
				p.Detail = "does not resolve here (Sluice's resolver refuses it): the outside probes stand for its address"
			} else {
				p.Verdict = Inconclusive
				p.Detail = "does not resolve here, so its address was not tried: pass --direct ADDR:PORT"
			}
			return p
		}
	}
	var nd net.Dialer
	for _, a := range addrs {
		target := net.JoinHostPort(a, port)
		c, err := nd.DialContext(ctx, "tcp", target)
		if err != nil {
			continue
		}
		v, detail := d.intercepted(ctx, c, port)
		c.Close()
		if v != Pass {
			p.Verdict = v
			p.Detail = fmt.Sprintf("connected to %s without the proxy: %s", target, detail)
			return p
		}
		p.Verdict = Pass
		p.Detail = "redirected to the gateway and refused there: " + detail
		return p
	}
	p.Verdict = Pass
	p.Detail = "blocked (" + directFailure(ctx) + ")"
	return p
}

func directFailure(ctx context.Context) string {
	if ctx.Err() != nil {
		return "timed out"
	}
	return "refused or unreachable"
}

// intercepted tells whether a connection that got through was taken by the gateway
// (a redirect in the sandbox's network) and refused: on 443 by a TLS handshake the
// tenant CA signed, on 80 by the refusal's proof. Pass only when shown.
func (d Doctor) intercepted(ctx context.Context, c net.Conn, port string) (Verdict, string) {
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if d.TenantCA == nil {
		return Inconclusive, "cannot tell whether the gateway took it without the tenant CA (--ca)"
	}
	host := d.denied()
	nonce := probetag.NewNonce()
	req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
	req.Header.Set(probetag.Header, probetag.Value(nonce))
	var rw net.Conn = c
	switch port {
	case "443":
		pool := x509.NewCertPool()
		pool.AddCert(d.TenantCA)
		tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: pool, NextProtos: []string{"http/1.1"}})
		if err := tc.HandshakeContext(ctx); err != nil {
			var ve *tls.CertificateVerificationError
			if errors.As(err, &ve) {
				return Fail, "a TLS server that is not the gateway answered: the sandbox has a way out"
			}
			return Inconclusive, "the TLS handshake ended (" + clean(err) + "): cannot tell who closed it; is the sandbox's address registered?"
		}
		rw = tc
	case "80":
	default:
		return Fail, "the sandbox has a way out on this port"
	}
	if err := req.Write(rw); err != nil {
		return Inconclusive, "the request could not be sent: " + clean(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(rw), req)
	if err != nil {
		return Inconclusive, "no answer (" + clean(err) + "): cannot tell who took the connection"
	}
	resp.Body.Close()
	reason := resp.Header.Get("Sluice-Reason")
	switch {
	case resp.StatusCode != http.StatusForbidden || reason == "":
		return Fail, fmt.Sprintf("answered %s: the sandbox has a way out", resp.Status)
	case port == "80" && !probetag.Verify(probetag.KeyFromCA(d.TenantCA.Raw), nonce, reason, resp.Header.Get(probetag.ProofHeader)):
		return Fail, "a 403 without the gateway's proof: an outside server answered"
	}
	return Pass, "403 " + reason
}

// udpDNS sends a query for a fresh denied name to addr:53: any answer is a way out.
func (d Doctor) udpDNS(ctx context.Context, addr string) Probe {
	p := Probe{Name: "no DNS to " + net.JoinHostPort(addr, "53") + "/udp"}
	r, err := d.exchange(ctx, net.JoinHostPort(addr, "53"), d.probeName())
	if err != nil {
		p.Verdict = Pass
		p.Detail = "no answer (" + clean(err) + ")"
		return p
	}
	p.Detail = fmt.Sprintf("answered %s from outside: DNS leaves around the gateway", dns.RcodeToString[r.Rcode])
	return p
}

// udpQUIC sends addr:443 a QUIC Initial-sized packet with a version no server speaks,
// which a QUIC server must answer with a Version Negotiation packet (RFC 9000, 6.1):
// any answer is a way out.
func (d Doctor) udpQUIC(ctx context.Context, addr string) Probe {
	target := net.JoinHostPort(addr, "443")
	p := Probe{Name: "no QUIC to " + target + "/udp"}
	c, err := net.Dial("udp", target)
	if err != nil {
		p.Verdict = Pass
		p.Detail = "cannot send (" + clean(err) + ")"
		return p
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(min(d.timeout(), 3*time.Second)))
	pkt := make([]byte, 1200)
	rand.Read(pkt)
	pkt[0] = 0xc0 | pkt[0]&0x0f                    // long header, fixed bit
	copy(pkt[1:5], []byte{0x1a, 0x2a, 0x3a, 0x4a}) // a reserved version: negotiation forced
	pkt[5] = 8                                     // destination connection id, 8 bytes
	pkt[14] = 8                                    // source connection id, 8 bytes
	if _, err := c.Write(pkt); err != nil {
		p.Verdict = Pass
		p.Detail = "cannot send (" + clean(err) + ")"
		return p
	}
	buf := make([]byte, 1500)
	if _, err := c.Read(buf); err != nil {
		p.Verdict = Pass
		p.Detail = "no answer (" + clean(err) + ")"
		return p
	}
	p.Detail = "answered from outside: UDP leaves around the gateway"
	return p
}
