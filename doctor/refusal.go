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

	"github.com/sluice-egress/sluice/internal/probetag"
)

type target struct{ name, authority string }

// refusalTargets are the destinations the gateway must refuse.
func (d Doctor) refusalTargets() []target {
	denied := d.denied()
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

// refused sends CONNECT authority through the gateway, tagged as a probe: it
// must answer 403 with a Sluice-Reason and the proof that the answer is
// Sluice's. Any other answer is a failure, a tunnel above all.
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
	nonce := probetag.NewNonce()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s%s: %s\r\n\r\n", authority, authority, d.proxyAuthHeader(),
		probetag.Header, probetag.Value(nonce))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		p.Detail = "no answer from the gateway: " + clean(err)
		return p
	}
	resp.Body.Close()
	return refusalVerdict(p, resp, d.proofKey(), nonce)
}

// proofKey is the key of the gateway's proofs to this client: its proxy token's.
func (d Doctor) proofKey() []byte {
	if d.Proxy == nil || d.Proxy.User == nil {
		return nil
	}
	pw, _ := d.Proxy.User.Password()
	return probetag.KeyFromToken(pw)
}

// refusedPlain sends a plain-HTTP GET through the gateway. Its answer could come
// from an upstream the gateway let it reach, which can write any header: only the
// proof makes it the gateway's.
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
	nonce := probetag.NewNonce()
	req.Header.Set(probetag.Header, probetag.Value(nonce))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		p.Detail = "no answer from the gateway: " + clean(err)
		return p
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return refusalVerdict(p, resp, d.proofKey(), nonce)
}

// refusalVerdict passes a 403 with a Sluice-Reason whose proof verifies under key.
func refusalVerdict(p Probe, resp *http.Response, key []byte, nonce string) Probe {
	reason := resp.Header.Get("Sluice-Reason")
	proven := key != nil && probetag.Verify(key, nonce, reason, resp.Header.Get(probetag.ProofHeader))
	switch {
	case resp.StatusCode == http.StatusForbidden && reason != "" && proven:
		p.Verdict = Pass
		p.Detail = "403 " + reason
	case resp.StatusCode == http.StatusForbidden && reason != "":
		p.Detail = "403 " + reason + " without the gateway's proof: the answer came from something other than Sluice (an upstream, another proxy)"
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
