// Package doctor proves from inside a sandbox that the gateway enforces its
// policy: probes that must pass through it, be refused by it, or find no way
// around it.
package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

// DeniedHost is the name the doctor asks for when no --denied host is
// given: .invalid never resolves (RFC 6761), so a gateway that let it
// through still reaches nothing.
const DeniedHost = "sluice-doctor-denied.invalid"

// Doctor proves, from where an agent runs, that the gateway enforces: an
// allowed control host works through it with the tenant CA, forbidden
// destinations are refused by it, and nothing leaves around it. A probe that
// cannot tell is Inconclusive, never a pass.
type Doctor struct {
	// Proxy is the gateway with the run's credentials (http://user:token@host:port).
	// Nil with Transparent: the sandbox's connections are redirected to the gateway.
	Proxy *url.URL
	// Transparent: the sandbox has no proxy settings; its resolver answers allowed
	// names with the gateway's address and its network redirects TCP 80 and 443 to
	// the gateway, which identifies it by address.
	Transparent bool
	// Control is an https URL the policy allows. Nil: the positive probes fail.
	Control *url.URL
	// Denied is a host the policy refuses. Empty: DeniedHost.
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

	// Outside are addresses on the internet that answer on TCP 80 and 443, DNS on
	// UDP 53 and QUIC on UDP 443 from a host with a way out, so that silence from
	// them means the fence. Nil: DefaultOutside; an empty non-nil slice: none.
	Outside []string
	// Resolvers are the sandbox's resolvers (host:port). Nil: the nameservers of
	// ResolvConf, on port 53.
	Resolvers []string
	// ResolvConf lists the sandbox's resolvers. Empty: /etc/resolv.conf.
	ResolvConf string
	// GatewayName is a name only Sluice's resolver answers. Empty: sluice.internal.
	GatewayName string
	// Metadata is the cloud metadata address a direct connection must not reach on
	// port 80. Empty: 169.254.169.254.
	Metadata string
}

// DefaultOutside are public resolvers that also serve HTTPS and QUIC.
var DefaultOutside = []string{"1.1.1.1", "8.8.8.8"}

func (d Doctor) outside() []string {
	if d.Outside == nil {
		return DefaultOutside
	}
	return d.Outside
}

func (d Doctor) denied() string {
	if d.Denied == "" {
		return DeniedHost
	}
	return d.Denied
}

// Verdict is what a probe showed. The zero value is Fail: a probe that does not
// set one has not shown anything.
type Verdict int

const (
	// Fail: the probe showed a way around the fence, or the fence not working.
	Fail Verdict = iota
	// Pass: the probe positively showed enforcement.
	Pass
	// Inconclusive: the probe could not tell; it counts as not passed.
	Inconclusive
	// Info: the probe does not apply here (it says why); it neither passes nor fails.
	Info
)

// String returns PASS, FAIL, INCONCLUSIVE or INFO.
func (v Verdict) String() string {
	switch v {
	case Pass:
		return "PASS"
	case Inconclusive:
		return "INCONCLUSIVE"
	case Info:
		return "INFO"
	}
	return "FAIL"
}

// Probe is one line of the doctor's report: a check, what it showed, and
// what it saw (never the proxy's password).
type Probe struct {
	Name    string
	Verdict Verdict
	Detail  string
}

// OK reports whether the probe passed.
func (p Probe) OK() bool { return p.Verdict == Pass }

// Required reports whether the probe counts towards the verdict: every probe but Info.
func (p Probe) Required() bool { return p.Verdict != Info }

func (p Probe) String() string {
	return fmt.Sprintf("%s  %-40s %s", p.Verdict, p.Name, p.Detail)
}

// Proven reports whether every required probe of ps passed, and how many did not.
func Proven(ps []Probe) (ok bool, notPassed int) {
	for _, p := range ps {
		if p.Required() && !p.OK() {
			notPassed++
		}
	}
	return notPassed == 0 && len(ps) > 0, notPassed
}

func (d Doctor) timeout() time.Duration {
	if d.Timeout <= 0 {
		return 5 * time.Second
	}
	return d.Timeout
}

// roots is the trust store the container's clients use, and its name.
func (d Doctor) roots() (*x509.CertPool, string, error) {
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
func (d Doctor) Run(ctx context.Context) []Probe {
	var out []Probe
	switch {
	case d.Proxy == nil && !d.Transparent:
		return []Probe{{Name: "proxy", Detail: "no proxy: set HTTPS_PROXY (load sluice.env) or pass --proxy; in a transparent sandbox pass --transparent"}}
	case d.Proxy != nil && d.Proxy.Scheme != "http":
		return []Probe{{Name: "proxy", Detail: fmt.Sprintf("proxy scheme %q: sluice speaks plain http to its clients", d.Proxy.Scheme)}}
	case d.Proxy != nil:
		out = append(out, Probe{Name: "proxy", Verdict: Pass, Detail: "http://" + d.Proxy.Host + credentialNote(d.Proxy)})
	default:
		out = append(out, Probe{Name: "transparent", Verdict: Info, Detail: "no proxy: connections by name go to the gateway through the sandbox's resolver and redirect"})
	}
	out = append(out, d.control(ctx)...)
	if d.Proxy != nil {
		for _, t := range d.refusalTargets() {
			out = append(out, d.refused(ctx, t.name, t.authority))
		}
		out = append(out, d.refusedPlain(ctx, "refused: metadata over plain http", "http://169.254.169.254/latest/meta-data/"))
	}
	resolv, sluiceDNS := d.resolvers(ctx)
	out = append(out, resolv...)
	for _, t := range d.directTargets() {
		out = append(out, d.direct(ctx, t, sluiceDNS))
	}
	out = append(out, d.outsideProbes(ctx)...)
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
func (d Doctor) control(ctx context.Context) []Probe {
	if d.Control == nil {
		return []Probe{
			{Name: "allowed control host", Detail: "no control URL: pass --control https://<a host the policy allows>/"},
			{Name: "tenant CA trusted", Detail: "not checked: no control URL"},
		}
	}
	roots, src, err := d.roots()
	if err != nil {
		return []Probe{{Name: "allowed control host", Detail: err.Error()}, {Name: "tenant CA trusted", Detail: err.Error()}}
	}
	var chain []*x509.Certificate
	var connectReason string
	tr := &http.Transport{
		// The CONNECT's refusal names its reason; the client's error would say only
		// "Forbidden".
		OnProxyConnectResponse: func(_ context.Context, _ *url.URL, _ *http.Request, resp *http.Response) error {
			if resp.StatusCode != http.StatusOK {
				connectReason = fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
			}
			return nil
		},
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
	if d.Proxy != nil {
		tr.Proxy = http.ProxyURL(d.Proxy)
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: d.timeout(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	name := "allowed " + d.Control.Host
	ctrl := Probe{Name: name}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.Control.String(), nil)
	if err != nil {
		ctrl.Detail = err.Error()
		return []Probe{ctrl, {Name: "tenant CA trusted", Detail: "not checked"}}
	}
	resp, err := client.Do(req)
	switch {
	case err != nil && connectReason != "":
		ctrl.Detail = fmt.Sprintf("refused by the gateway: %s (allow the host, or pick another --control)", connectReason)
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
			ctrl.Verdict = Pass
			ctrl.Detail = fmt.Sprintf("%s through the gateway", resp.Status)
		}
	}
	return []Probe{ctrl, d.trust(chain, roots, src)}
}

// trust checks the leaf the client was shown against the container's store
// and, when known, the tenant CA.
func (d Doctor) trust(chain []*x509.Certificate, roots *x509.CertPool, src string) Probe {
	p := Probe{Name: "tenant CA trusted"}
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
	if d.TenantCA == nil && d.Transparent {
		// Without the tenant CA, a leaf the store trusts may be the host's own: the
		// connection would then not have been the gateway's.
		p.Verdict = Inconclusive
		p.Detail = fmt.Sprintf("leaf for %s verifies against %s, but without --ca it cannot be told from the host's own", host, src)
		return p
	}
	p.Verdict = Pass
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

// clean shortens an error for a report line; it never holds the proxy
// password because url.Error redacts it.
func clean(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// ProxyFromEnv reads the proxy the way sluice.env sets it.
func ProxyFromEnv(getenv func(string) string) string {
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// ReadCert reads the first certificate of a PEM file.
func ReadCert(path string) (*x509.Certificate, error) {
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
