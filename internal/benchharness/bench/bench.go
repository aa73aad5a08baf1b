// Package bench sets up an HTTPS upstream and a Sluice gateway in front of it on loopback, and
// defines the cases that measure a request through the gateway against the same request sent
// directly, for `make bench` and for the gateway package's Go benchmarks.
package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// Names the upstream answers to. Every name under Domain resolves to the upstream (in the
// gateway's guard and in the direct client's dialer), so that a fresh name per request
// misses the gateway's leaf cache.
const (
	Domain = "bench.example.test"
	Tenant = "bench"
)

// BodySize is the size of the large request and response bodies: 1 MiB.
const BodySize = 1 << 20

// Upstream paths.
const (
	pathSmall    = "/small"
	pathUpload   = "/upload"
	pathDownload = "/download"
)

// smallBody is what the upstream answers to a small request.
var smallBody = []byte("ok\n")

// Via names the way a client reaches the upstream.
type Via int

const (
	// Direct: the client talks TLS to the upstream itself, trusting the upstream's CA.
	Direct Via = iota
	// Gateway: the client sends CONNECT to the gateway with the tenant's token and trusts
	// the tenant's CA; the gateway opens the TLS, checks the request and forwards it. This
	// gateway has no secret scanner.
	Gateway
	// GatewayScan: as Gateway, through a second gateway that differs only in scanning
	// every request with a scanner built as `sluice serve` builds it (production always
	// scans).
	GatewayScan
)

// String returns "direct", "gateway" or "gateway+scan".
func (v Via) String() string {
	switch v {
	case Gateway:
		return "gateway"
	case GatewayScan:
		return "gateway+scan"
	}
	return "direct"
}

// Env is an upstream and a gateway in front of it, both on loopback. Start it with Start;
// Close stops both and removes the temporary files.
type Env struct {
	// UpstreamAddr is the upstream's "127.0.0.1:port".
	UpstreamAddr string
	// ProxyAddr is the gateway's "127.0.0.1:port".
	ProxyAddr string
	// ScanProxyAddr is the scanning gateway's "127.0.0.1:port".
	ScanProxyAddr string
	// UploadBody is the body of the upload case: BodySize bytes of benign chat-completions
	// JSON (plain-text messages), so that the scanner does the work a real request asks.
	UploadBody []byte

	port      int
	token     string
	dir       string
	upRoots   *x509.CertPool // trusts the upstream's CA: direct clients and the gateway
	tenantCAs *x509.CertPool // trusts the tenant's CA: clients through the gateway
	gw        *gateway.Gateway
	gwScan    *gateway.Gateway
	upstream  *http.Server
	cold      atomic.Int64

	mu      sync.Mutex
	lastErr error
}

// LastError returns the error the last failed case stopped at, nil if none did.
// testing.Benchmark discards a failed benchmark's message; this keeps it.
func (e *Env) LastError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastErr
}

func (e *Env) fail(err error) {
	e.mu.Lock()
	e.lastErr = err
	e.mu.Unlock()
}

// policy is the config: %[1]d is the upstream's port. Resolution is the guard's Resolver's
// job (every name under Domain), so upstream.hosts stays empty. No scanning keys: the
// scanner runs on the defaults; its key and canary file live in data_dir.
const policy = `
version: 1
data_dir: data
tenants:
  bench:
    token_file: bench.token
    classes:
      agent:
        allow:
          - host: bench.example.test
            ports: [%[1]d]
          - host: "*.bench.example.test"
            ports: [%[1]d]
`

// Start starts the upstream and the gateway. Temporary files (the policy, the token and the
// tenant CA) live in a directory that Close removes.
func Start() (_ *Env, err error) {
	e := &Env{}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	e.dir, err = os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: temp dir: %w", err)
	}
	e.UploadBody = ChatBody(BodySize)
	if err := e.startUpstream(); err != nil {
		return nil, err
	}
	if err := e.startGateway(); err != nil {
		return nil, err
	}
	return e, nil
}

// Close stops the gateway and the upstream and removes the temporary directory.
func (e *Env) Close() error {
	var errs []error
	for _, gw := range []*gateway.Gateway{e.gw, e.gwScan} {
		if gw != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, gw.Shutdown(ctx))
			cancel()
		}
	}
	if e.upstream != nil {
		errs = append(errs, e.upstream.Close())
	}
	if e.dir != "" {
		errs = append(errs, os.RemoveAll(e.dir))
	}
	return errors.Join(errs...)
}

func (e *Env) startUpstream() error {
	cert, pool, err := upstreamCert()
	if err != nil {
		return err
	}
	e.upRoots = pool
	payload := make([]byte, BodySize)
	if _, err := rand.Read(payload); err != nil {
		return fmt.Errorf("bench: payload: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathSmall, func(w http.ResponseWriter, r *http.Request) {
		w.Write(smallBody)
	})
	mux.HandleFunc("POST "+pathUpload, func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil || n != int64(len(e.UploadBody)) {
			http.Error(w, fmt.Sprintf("read %d bytes: %v", n, err), http.StatusBadRequest)
			return
		}
		w.Write(smallBody)
	})
	mux.HandleFunc("GET "+pathDownload, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		w.Write(payload)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("bench: upstream listener: %w", err)
	}
	e.UpstreamAddr = l.Addr().String()
	e.port = l.Addr().(*net.TCPAddr).Port
	e.upstream = &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
	}
	go e.upstream.ServeTLS(l, "", "")
	return nil
}

// upstreamCert mints a throwaway CA and a leaf for Domain and *.Domain, ECDSA P-256 like
// the gateway's leaves, so that both paths pay for the same kind of handshake signature.
func upstreamCert() (tls.Certificate, *x509.CertPool, error) {
	fail := func(what string, err error) (tls.Certificate, *x509.CertPool, error) {
		return tls.Certificate{}, nil, fmt.Errorf("bench: upstream %s: %w", what, err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail("CA key", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "sluice bench upstream CA"},
		// Backdated so that a clock a little behind still accepts it.
		NotBefore: now.Add(-time.Hour),
		// A day outlives any benchmark run; the key lives in memory only.
		NotAfter: now.Add(24 * time.Hour),
		// Signing the one leaf is all this CA does.
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// No intermediates under it.
		MaxPathLenZero: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fail("CA certificate", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fail("CA certificate", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail("leaf key", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: Domain},
		// The exact name for the warm case, the wildcard for a fresh name per request.
		DNSNames:  []string{Domain, "*." + Domain},
		NotBefore: now.Add(-time.Hour),
		NotAfter:  now.Add(24 * time.Hour),
		// ECDSA signs the handshake; nothing is encrypted to the key.
		KeyUsage: x509.KeyUsageDigitalSignature,
		// A TLS server and nothing else.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return fail("leaf certificate", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool, nil
}

func (e *Env) startGateway() error {
	tok, err := rules.NewToken()
	if err != nil {
		return fmt.Errorf("bench: token: %w", err)
	}
	e.token = tok
	if err := os.WriteFile(filepath.Join(e.dir, "bench.token"), []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("bench: token file: %w", err)
	}
	cfgPath := filepath.Join(e.dir, "sluice.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, policy, e.port), 0o600); err != nil {
		return fmt.Errorf("bench: policy file: %w", err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return fmt.Errorf("bench: load policy: %w", err)
	}
	engine, err := rules.Compile(cfg.Policy(), cfg.Token)
	if err != nil {
		return fmt.Errorf("bench: compile policy: %w", err)
	}
	quiet := slog.New(slog.DiscardHandler)
	cas := &ca.Store{Dir: filepath.Join(e.dir, "ca"), Logger: quiet}
	auth, err := cas.Authority(Tenant)
	if err != nil {
		return fmt.Errorf("bench: tenant CA: %w", err)
	}
	e.tenantCAs = x509.NewCertPool()
	e.tenantCAs.AddCert(auth.Certificate())

	loopback := netip.MustParseAddr("127.0.0.1")
	newGateway := func() *gateway.Gateway {
		return &gateway.Gateway{
			Policy: engine,
			Leaf: func(tenant, host string) (*tls.Certificate, error) {
				a, err := cas.Authority(tenant)
				if err != nil {
					return nil, err
				}
				return a.Leaf(host)
			},
			Dialer: &guard.Dialer{
				Resolver: domainResolver{addr: loopback},
				// The upstream lives on loopback: take loopback out of the deny ranges (and
				// out of the gateway's own addresses), and leave every other range denied.
				Deny: withoutLoopback(guard.DefaultDeny()),
				Self: func() []netip.Addr { return nil },
			},
			RootCAs: e.upRoots,
			Logger:  quiet,
		}
	}
	e.gw = newGateway()
	if e.ProxyAddr, err = serve(e.gw); err != nil {
		return err
	}

	sc, err := newScanner(cfg)
	if err != nil {
		return err
	}
	// As `sluice serve` does (openCredentials): a phantom registry in the data directory,
	// here with no credentials, is both the scanner's PhantomSet and the gateway's swap.
	reg := &phantom.Registry{Dir: cfg.DataPath(), Key: sc.Key}
	sc.Phantoms = reg
	e.gwScan = newGateway()
	e.gwScan.Scanner = sc
	e.gwScan.Credentials = reg
	if e.ScanProxyAddr, err = serve(e.gwScan); err != nil {
		return err
	}
	return nil
}

// serve starts gw on a loopback port and returns its address.
func serve(gw *gateway.Gateway) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("bench: proxy listener: %w", err)
	}
	go gw.Serve(l)
	return l.Addr().String(), nil
}

// newScanner builds the scanner with scanner.Build, as cmd/sluice does for cfg: the shipped rule
// packs compiled once, the scanning policy, a fingerprint key created in the data
// directory and the canaries kept there. It refuses scanning keys that it does not
// reproduce (rule packs, actions, bindings, per-tenant overrides): the bench policy sets none.
func newScanner(cfg *config.Config) (*scanner.Scanner, error) {
	s := cfg.Scanning
	if len(s.RulePacks) > 0 || len(s.Actions) > 0 || len(s.Bindings) > 0 || len(s.Tenants) > 0 {
		return nil, errors.New("bench: the bench policy must not set scanning rule packs, actions, bindings or tenants")
	}
	sc, err := scanner.Build(scanner.Options{
		Policy: scanner.Policy{
			Actions:           map[string]scanner.Action{},
			NoDefaultBindings: s.NoDefaultBindings,
			ForwardOversize:   s.ForwardsOversize(),
		},
		DataDir:      cfg.DataPath(),
		CreateKey:    true,
		MaxBodyBytes: int64(s.MaxBodyBytes),
		DecodeDepth:  s.DecodeDepth,
		Timeout:      time.Duration(s.Timeout),
	})
	if err != nil {
		return nil, fmt.Errorf("bench: scanner: %w", err)
	}
	return sc, nil
}

func withoutLoopback(ps []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range ps {
		if p.Contains(netip.MustParseAddr("127.0.0.1")) || p.Contains(netip.IPv6Loopback()) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// domainResolver resolves Domain and every name under it to addr, and nothing else.
type domainResolver struct{ addr netip.Addr }

func (r domainResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if inDomain(host) {
		return []netip.Addr{r.addr}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func inDomain(host string) bool { return host == Domain || strings.HasSuffix(host, "."+Domain) }

// Client returns an HTTP/1.1 client that reaches the upstream via v. With keepAlive false
// every request opens a new connection and a full TLS handshake (no session resumption:
// the client keeps no session cache); through the gateway that is a new CONNECT as well.
func (e *Env) Client(v Via, keepAlive bool) *http.Client { return e.client(v, keepAlive, false) }

// client is Client, speaking HTTP/2 when h2 is set (the gateway offers it inside its
// tunnels, as the upstream does), HTTP/1.1 with up to 16 idle connections otherwise.
func (e *Env) client(v Via, keepAlive, h2 bool) *http.Client {
	tr := &http.Transport{
		DisableKeepAlives:   !keepAlive,
		MaxIdleConnsPerHost: 16,
		TLSHandshakeTimeout: 10 * time.Second,
		// Same client on every path, TLS defaults otherwise.
		ForceAttemptHTTP2: h2,
	}
	switch v {
	case Gateway, GatewayScan:
		proxy := e.ProxyAddr
		if v == GatewayScan {
			proxy = e.ScanProxyAddr
		}
		tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword(Tenant, e.token), Host: proxy})
		tr.TLSClientConfig = &tls.Config{RootCAs: e.tenantCAs}
	default:
		tr.Proxy = nil // never an HTTPS_PROXY from the environment
		tr.TLSClientConfig = &tls.Config{RootCAs: e.upRoots}
		upstream := e.UpstreamAddr
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil || !inDomain(host) {
				return nil, fmt.Errorf("bench: direct client dials only names under %s, not %q", Domain, addr)
			}
			return d.DialContext(ctx, network, upstream)
		}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// URL returns the https URL of path on host at the upstream's port.
func (e *Env) URL(host, path string) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(e.port)) + path
}

// ColdHost returns a name under Domain that no earlier call returned, so that the
// gateway has no leaf for it yet.
func (e *Env) ColdHost() string {
	return "n" + strconv.FormatInt(e.cold.Add(1), 10) + "." + Domain
}
