package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// DoctorDeniedHost is the name the doctor asks for when no --denied host is
// given: .invalid never resolves (RFC 6761), so a gateway that let it
// through still reaches nothing.
const DoctorDeniedHost = "sluice-doctor-denied.invalid"

// doctor proves, from where an agent runs, that the gateway enforces: an
// allowed control host works through it with the tenant CA, forbidden
// destinations are refused by it, and nothing leaves around it.
type doctor struct {
	// Proxy is the gateway with the run's credentials (http://user:token@host:port).
	Proxy *url.URL
	// Control is an https URL the policy allows. Nil: the positive probes fail.
	Control *url.URL
	// Denied is a host the policy refuses. Empty: DoctorDeniedHost.
	Denied string
	// Private is a private address the gateway must refuse. Empty: 10.0.0.1.
	Private string
	// Direct are extra host:port targets that a connection around the proxy
	// must not reach (e.g. the control upstream's real address).
	Direct []string
	// RouteFile is the kernel's IPv4 route table. Empty: /proc/net/route.
	RouteFile string
	// CertFile is the bundle the container's clients trust (SSL_CERT_FILE,
	// which replaces the system store, as in Go and OpenSSL). Empty: the
	// system store.
	CertFile string
	// TenantCA, when set, must be the issuer of the control host's leaf (so
	// the tunnel was opened by this gateway, not passed through). Nil: not checked.
	TenantCA *x509.Certificate
	// Timeout bounds each probe. Zero: 5s.
	Timeout time.Duration
}

// probe is one line of the doctor's report.
type probe struct {
	Name   string
	OK     bool
	Detail string
}

func (p probe) String() string {
	verdict := "FAIL"
	if p.OK {
		verdict = "PASS"
	}
	return fmt.Sprintf("%s  %-40s %s", verdict, p.Name, p.Detail)
}

func (d *doctor) timeout() time.Duration {
	if d.Timeout <= 0 {
		return 5 * time.Second
	}
	return d.Timeout
}

// roots is the trust store the container's clients use, and its name.
func (d *doctor) roots() (*x509.CertPool, string, error) {
	if d.CertFile != "" {
		b, err := os.ReadFile(d.CertFile)
		if err != nil {
			return nil, "", fmt.Errorf("SSL_CERT_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, "", fmt.Errorf("SSL_CERT_FILE=%s holds no PEM certificate", d.CertFile)
		}
		return pool, "SSL_CERT_FILE=" + d.CertFile, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		return nil, "", fmt.Errorf("system trust store: %w", err)
	}
	return pool, "the system trust store", nil
}

// Run runs every probe and returns the report lines in order.
func (d *doctor) Run(ctx context.Context) []probe {
	var out []probe
	if d.Proxy == nil {
		return []probe{{Name: "proxy", Detail: "no proxy: set HTTPS_PROXY (load sluice.env) or pass --proxy"}}
	}
	if d.Proxy.Scheme != "http" {
		return []probe{{Name: "proxy", Detail: fmt.Sprintf("proxy scheme %q: sluice speaks plain http to its clients", d.Proxy.Scheme)}}
	}
	out = append(out, probe{Name: "proxy", OK: true, Detail: "http://" + d.Proxy.Host + credentialNote(d.Proxy)})
	out = append(out, d.control(ctx)...)
	for _, t := range d.refusalTargets() {
		out = append(out, d.refused(ctx, t.name, t.authority))
	}
	out = append(out, d.refusedPlain(ctx, "refused: metadata over plain http", "http://169.254.169.254/latest/meta-data/"))
	for _, t := range d.directTargets() {
		out = append(out, d.direct(ctx, t))
	}
	return out
}

func credentialNote(u *url.URL) string {
	if u.User == nil {
		return " (no credentials: the gateway will answer 407)"
	}
	return " as " + u.User.Username()
}

// control fetches the allowed URL through the gateway and checks the chain
// it was shown: the container's store must trust it, and it must come from
// the tenant CA.
func (d *doctor) control(ctx context.Context) []probe {
	if d.Control == nil {
		return []probe{
			{Name: "allowed control host", Detail: "no control URL: pass --control https://<a host the policy allows>/"},
			{Name: "tenant CA trusted", Detail: "not checked: no control URL"},
		}
	}
	roots, src, err := d.roots()
	if err != nil {
		return []probe{{Name: "allowed control host", Detail: err.Error()}, {Name: "tenant CA trusted", Detail: err.Error()}}
	}
	var chain []*x509.Certificate
	tr := &http.Transport{
		Proxy: http.ProxyURL(d.Proxy),
		TLSClientConfig: &tls.Config{
			RootCAs: roots,
			// Runs after the standard verification succeeded: keeps the
			// chain for the trust probe's report.
			VerifyConnection: func(cs tls.ConnectionState) error {
				chain = cs.PeerCertificates
				return nil
			},
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: d.timeout(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	name := "allowed " + d.Control.Host
	ctrl := probe{Name: name}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.Control.String(), nil)
	if err != nil {
		ctrl.Detail = err.Error()
		return []probe{ctrl, {Name: "tenant CA trusted", Detail: "not checked"}}
	}
	resp, err := client.Do(req)
	switch {
	case err != nil:
		ctrl.Detail = "request failed: " + clean(err)
		chain = failedLeaf(err)
	default:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		reason := resp.Header.Get("Sluice-Reason")
		switch {
		case reason != "":
			ctrl.Detail = fmt.Sprintf("refused by the gateway: %d %s (allow the host, or pick another --control)", resp.StatusCode, reason)
		case resp.StatusCode >= 500:
			ctrl.Detail = fmt.Sprintf("upstream answered %s", resp.Status)
		default:
			ctrl.OK = true
			ctrl.Detail = fmt.Sprintf("%s through the gateway", resp.Status)
		}
	}
	return []probe{ctrl, d.trust(chain, roots, src)}
}

// trust checks the leaf the client was shown against the container's store
// and, when known, the tenant CA.
func (d *doctor) trust(chain []*x509.Certificate, roots *x509.CertPool, src string) probe {
	p := probe{Name: "tenant CA trusted"}
	if len(chain) == 0 {
		p.Detail = "no certificate seen: the TLS handshake through the gateway did not happen"
		return p
	}
	leaf := chain[0]
	host := d.Control.Hostname()
	if err := verifyChain(chain, host, roots); err != nil {
		p.Detail = fmt.Sprintf("leaf for %s (issuer %q) does not verify against %s: %v", host, leaf.Issuer.CommonName, src, err)
		return p
	}
	if d.TenantCA != nil {
		only := x509.NewCertPool()
		only.AddCert(d.TenantCA)
		if err := verifyChain(chain, host, only); err != nil {
			p.Detail = fmt.Sprintf("leaf for %s is issued by %q, not the tenant CA %q: the tunnel was not opened by the gateway", host, leaf.Issuer.CommonName, d.TenantCA.Subject.CommonName)
			return p
		}
	}
	p.OK = true
	p.Detail = fmt.Sprintf("leaf for %s issued by %q verifies against %s", host, leaf.Issuer.CommonName, src)
	return p
}

// failedLeaf is the certificate a failed verification names, so that the
// trust probe can say who issued it; nil for other failures.
func failedLeaf(err error) []*x509.Certificate {
	var ua x509.UnknownAuthorityError
	if errors.As(err, &ua) && ua.Cert != nil {
		return []*x509.Certificate{ua.Cert}
	}
	var he x509.HostnameError
	if errors.As(err, &he) && he.Certificate != nil {
		return []*x509.Certificate{he.Certificate}
	}
	return nil
}

// verifyChain checks a peer chain for host against roots.
func verifyChain(chain []*x509.Certificate, host string, roots *x509.CertPool) error {
	if len(chain) == 0 {
		return errors.New("no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter})
	return err
}

type target struct{ name, authority string }

// refusalTargets are the destinations the gateway must refuse.
func (d *doctor) refusalTargets() []target {
	denied := d.Denied
	if denied == "" {
		denied = DoctorDeniedHost
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
func (d *doctor) proxyHost() netip.Addr {
	a, _ := netip.ParseAddr(d.Proxy.Hostname())
	return a
}

// refused sends CONNECT authority through the gateway: it must answer 403
// with a Sluice-Reason. Any other answer is a failure, a tunnel above all.
func (d *doctor) refused(ctx context.Context, name, authority string) probe {
	p := probe{Name: name + " " + authority}
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
func (d *doctor) refusedPlain(ctx context.Context, name, rawURL string) probe {
	p := probe{Name: name}
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

func refusalVerdict(p probe, resp *http.Response) probe {
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

func (d *doctor) proxyAuthHeader() string {
	if d.Proxy.User == nil {
		return ""
	}
	pw, _ := d.Proxy.User.Password()
	return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(d.Proxy.User.Username()+":"+pw)) + "\r\n"
}

// directTargets are host:port pairs a connection around the proxy must not
// reach: the control host's real address, the bridge gateway, and --direct.
func (d *doctor) directTargets() []string {
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
func (d *doctor) direct(ctx context.Context, hostport string) probe {
	p := probe{Name: "no direct route " + hostport}
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

// bridgeGateways are the IPv4 next hops of the default routes and, on a
// network without one (an internal Docker network), the first address of
// each directly connected subnet, where the bridge usually sits.
func (d *doctor) bridgeGateways() []netip.Addr {
	path := d.RouteFile
	if path == "" {
		path = "/proc/net/route"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	gws, err := parseBridgeGateways(f)
	if err != nil {
		return nil
	}
	return gws
}

// parseBridgeGateways reads /proc/net/route (little-endian hex fields).
func parseBridgeGateways(r io.Reader) ([]netip.Addr, error) {
	var defaults, subnets []netip.Addr
	seen := map[netip.Addr]bool{}
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue // header
		}
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		dst, err1 := hexAddr(f[1])
		gw, err2 := hexAddr(f[2])
		mask, err3 := hexAddr(f[7])
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, errors.New("route table: bad field")
		}
		var a netip.Addr
		switch {
		case dst.IsUnspecified() && !gw.IsUnspecified():
			a = gw
		case gw.IsUnspecified() && !dst.IsUnspecified():
			bits := 0
			for _, b := range mask.As4() {
				for ; b != 0; b <<= 1 {
					bits++
				}
			}
			if bits == 0 || bits > 30 {
				continue
			}
			a = dst.Next()
		default:
			continue
		}
		if seen[a] || a.IsLoopback() {
			continue
		}
		seen[a] = true
		if dst.IsUnspecified() {
			defaults = append(defaults, a)
		} else {
			subnets = append(subnets, a)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(defaults) > 0 {
		return defaults, nil
	}
	return subnets, nil
}

func hexAddr(s string) (netip.Addr, error) {
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return netip.Addr{}, err
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(v))
	return netip.AddrFrom4(b), nil
}

// clean shortens an error for a report line; it never holds the proxy
// password because url.Error redacts it.
func clean(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// proxyFromEnv reads the proxy the way sluice.env sets it.
func proxyFromEnv(getenv func(string) string) string {
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// readCert reads the first certificate of a PEM file.
func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return nil, fmt.Errorf("%s holds no PEM certificate", path)
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runDoctor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("doctor", stderr)
	proxy := fs.String("proxy", "", "proxy URL with credentials (default: HTTPS_PROXY, as sluice.env sets it)")
	control := fs.String("control", getenv("SLUICE_DOCTOR_CONTROL"), "an https URL the policy allows (default: SLUICE_DOCTOR_CONTROL)")
	denied := fs.String("denied", "", "a host the policy refuses (default: "+DoctorDeniedHost+")")
	private := fs.String("private", "", "a private address the gateway must refuse (default: 10.0.0.1)")
	caFile := fs.String("ca", getenv("NODE_EXTRA_CA_CERTS"), "the tenant CA (ca.pem) the control host's leaf must come from (default: NODE_EXTRA_CA_CERTS, as sluice.env sets it)")
	timeout := fs.Duration("timeout", 5*time.Second, "timeout of each probe")
	routes := fs.String("routes", "/proc/net/route", "IPv4 route table to find the bridge gateway in")
	var direct listFlag
	fs.Var(&direct, "direct", "host:port that a connection around the proxy must not reach (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	d := &doctor{Denied: *denied, Private: *private, Direct: direct, Timeout: *timeout,
		CertFile: getenv("SSL_CERT_FILE"), RouteFile: *routes}
	raw := *proxy
	if raw == "" {
		raw = proxyFromEnv(getenv)
	}
	if raw != "" {
		if !strings.Contains(raw, "://") {
			raw = "http://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil {
			return fmt.Errorf("%w: proxy URL does not parse", errUsage) // the URL may hold a token: not echoed
		}
		d.Proxy = u
	}
	if *control != "" {
		u, err := url.Parse(*control)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("%w: --control %q: want an https URL", errUsage, *control)
		}
		d.Control = u
	}
	if *caFile != "" {
		c, err := readCert(*caFile)
		if err != nil {
			return fmt.Errorf("tenant CA: %w", err)
		}
		d.TenantCA = c
	}
	return report(d.Run(ctx), stdout)
}

// report prints one line per probe and fails when any probe failed.
func report(ps []probe, w io.Writer) error {
	failed := 0
	for _, p := range ps {
		fmt.Fprintln(w, p)
		if !p.OK {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(w, "doctor: %d of %d probes failed\n", failed, len(ps))
		return fmt.Errorf("doctor: %d of %d probes failed: egress is not enforced as expected", failed, len(ps))
	}
	fmt.Fprintf(w, "doctor: all %d probes passed\n", len(ps))
	return nil
}

// runHealthcheck is the container health check (an image from scratch has
// no shell): the proxy must answer an unauthenticated CONNECT with 407, and
// the admin listener's /healthz, where it answers, must say 200.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("healthcheck", stderr)
	proxy := fs.String("proxy", "127.0.0.1:3128", "proxy address to probe")
	admin := fs.String("admin", "127.0.0.1:8080", "admin address whose /healthz to probe where it listens (empty: skip)")
	timeout := fs.Duration("timeout", 3*time.Second, "overall timeout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := probeProxy(ctx, *proxy); err != nil {
		return fmt.Errorf("healthcheck: proxy %s: %w", *proxy, err)
	}
	if *admin != "" {
		if err := probeHealthz(ctx, *admin); err != nil {
			return fmt.Errorf("healthcheck: admin %s: %w", *admin, err)
		}
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}

func probeProxy(ctx context.Context, addr string) error {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	io.WriteString(c, "CONNECT sluice-healthcheck.invalid:443 HTTP/1.1\r\nHost: sluice-healthcheck.invalid:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusProxyAuthRequired {
		return fmt.Errorf("unauthenticated CONNECT answered %s, want 407", resp.Status)
	}
	return nil
}

// probeHealthz: a refused connection or a 404 means there is no admin
// health endpoint (yet), which is not a failure of the proxy.
func probeHealthz(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return err
	}
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			return nil
		}
		return err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return fmt.Errorf("/healthz answered %s", resp.Status)
}
