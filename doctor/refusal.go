package doctor

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"
)

type target struct{ name, authority string }

// refusalTargets are the destinations the gateway must refuse.
func (d Doctor) refusalTargets() []target {
	denied := d.Denied
	if denied == "" {
		denied = DeniedHost
	}
	private := d.Private
	if private == "" {
		private = "10.0.0.1"
	}
	ts := []target{
		{"refused: denied host", net.JoinHostPort(denied, "443")},
		{"refused: loopback", "127.0.0.1:443"},
		{"refused: metadata", "169.254.169.254:443"},
		{"refused: private address", net.JoinHostPort(private, "443")},
	}
	for _, gw := range d.bridgeGateways() {
		ts = append(ts, target{"refused: bridge gateway", net.JoinHostPort(gw.String(), "443")})
	}
	if h := d.proxyHost(); h.IsValid() {
		ts = append(ts, target{"refused: the gateway itself", net.JoinHostPort(h.String(), d.Proxy.Port())})
	}
	return ts
}

// proxyHost is the gateway's address when the proxy URL names an IP.
func (d Doctor) proxyHost() netip.Addr {
	a, _ := netip.ParseAddr(d.Proxy.Hostname())
	return a
}

// refused sends CONNECT authority through the gateway: it must answer 403
// with a Sluice-Reason. Any other answer is a failure, a tunnel above all.
func (d Doctor) refused(ctx context.Context, name, authority string) Probe {
	p := Probe{Name: name + " " + authority}
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "tcp", d.Proxy.Host)
	if err != nil {
		p.Detail = "cannot reach the gateway: " + clean(err)
		return p
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", authority, authority, d.proxyAuthHeader())
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		p.Detail = "no answer from the gateway: " + clean(err)
		return p
	}
	resp.Body.Close()
	return refusalVerdict(p, resp)
}

// refusedPlain sends a plain-HTTP GET through the gateway.
func (d Doctor) refusedPlain(ctx context.Context, name, rawURL string) Probe {
	p := Probe{Name: name}
	tr := &http.Transport{Proxy: http.ProxyURL(d.Proxy)}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		p.Detail = err.Error()
		return p
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		p.Detail = "no answer from the gateway: " + clean(err)
		return p
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return refusalVerdict(p, resp)
}

func refusalVerdict(p Probe, resp *http.Response) Probe {
	reason := resp.Header.Get("Sluice-Reason")
	switch {
	case resp.StatusCode == http.StatusForbidden && reason != "":
		p.OK = true
		p.Detail = "403 " + reason
	case resp.StatusCode == http.StatusProxyAuthRequired:
		p.Detail = "407: the gateway did not accept the credentials, so the policy was never asked (load sluice.env)"
	case resp.StatusCode/100 == 2:
		p.Detail = fmt.Sprintf("%s: the gateway let it through", resp.Status)
	default:
		p.Detail = fmt.Sprintf("%s (Sluice-Reason %q): want 403 with a Sluice-Reason", resp.Status, reason)
	}
	return p
}

func (d Doctor) proxyAuthHeader() string {
	if d.Proxy.User == nil {
		return ""
	}
	pw, _ := d.Proxy.User.Password()
	return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(d.Proxy.User.Username()+":"+pw)) + "\r\n"
}

// directTargets are host:port pairs a connection around the proxy must not
// reach: the control host's real address, the bridge gateway, and --direct.
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
	return append(ts, d.Direct...)
}

// direct opens a TCP connection without the proxy: it must fail.
func (d Doctor) direct(ctx context.Context, hostport string) Probe {
	p := Probe{Name: "no direct route " + hostport}
	timeout := min(d.timeout(), 3*time.Second)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		p.Detail = err.Error()
		return p
	}
	addrs := []string{host}
	if _, err := netip.ParseAddr(host); err != nil {
		addrs, err = net.DefaultResolver.LookupHost(ctx, host)
		if err != nil || len(addrs) == 0 {
			p.OK = true
			p.Detail = "the name does not resolve here, so nothing can dial it directly"
			return p
		}
	}
	var nd net.Dialer
	for _, a := range addrs {
		c, err := nd.DialContext(ctx, "tcp", net.JoinHostPort(a, port))
		if err == nil {
			c.Close()
			p.Detail = fmt.Sprintf("connected to %s without the proxy: this container has a way out around the gateway", net.JoinHostPort(a, port))
			return p
		}
	}
	p.OK = true
	p.Detail = "blocked (" + directFailure(ctx) + ")"
	return p
}

func directFailure(ctx context.Context) string {
	if ctx.Err() != nil {
		return "timed out"
	}
	return "refused or unreachable"
}
