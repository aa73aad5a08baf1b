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
// destinations are refused by it, and nothing leaves around it.
type Doctor struct {
	// Proxy is the gateway with the run's credentials (http://user:token@host:port).
	Proxy *url.URL
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
}

// Probe is one line of the doctor's report: a check, whether it passed, and
// what it saw (never the proxy's password).
type Probe struct {
	Name   string
	OK     bool
	Detail string
}

func (p Probe) String() string {
	verdict := "FAIL"
	if p.OK {
		verdict = "PASS"
	}
	return fmt.Sprintf("%s  %-40s %s", verdict, p.Name, p.Detail)
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
	if d.Proxy == nil {
		return []Probe{{Name: "proxy", Detail: "no proxy: set HTTPS_PROXY (load sluice.env) or pass --proxy"}}
	}
	if d.Proxy.Scheme != "http" {
		return []Probe{{Name: "proxy", Detail: fmt.Sprintf("proxy scheme %q: sluice speaks plain http to its clients", d.Proxy.Scheme)}}
	}
	out = append(out, Probe{Name: "proxy", OK: true, Detail: "http://" + d.Proxy.Host + credentialNote(d.Proxy)})
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
	ctrl := Probe{Name: name}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.Control.String(), nil)
	if err != nil {
		ctrl.Detail = err.Error()
		return []Probe{ctrl, {Name: "tenant CA trusted", Detail: "not checked"}}
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
