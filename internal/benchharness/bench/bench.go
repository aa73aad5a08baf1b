// Package bench sets up an HTTPS upstream and Sluice gateways in front of it on loopback (in
// this process or one of their own), and squid where asked, and defines the cases that
// measure a request through each against the same request sent directly, for `make bench`
// and for the gateway package's Go benchmarks.
package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-egress/sluice/gateway"
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
	pathTurn     = "/turn"
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
	// Tunnel: an open CONNECT tunnel, no inspection: the Gateway's passthrough (the
	// same listener, identification and policy, then bytes spliced both ways) to the
	// upstream's second port; the client trusts the upstream's CA, as Direct.
	Tunnel
	// Squid: squid with ssl-bump on the same loads (squid.go); only when Start was
	// given a squid binary.
	Squid
)

// String returns "direct", "gateway", "gateway+scan", "tunnel" or "squid".
func (v Via) String() string {
	switch v {
	case Gateway:
		return "gateway"
	case GatewayScan:
		return "gateway+scan"
	case Tunnel:
		return "tunnel"
	case Squid:
		return "squid"
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
	// SquidAddr is squid's "127.0.0.1:port"; empty without squid.
	SquidAddr string
	// UploadBody is the body of the upload case: BodySize bytes of benign chat-completions
	// JSON (plain-text messages), so that the scanner does the work a real request asks.
	UploadBody []byte

	port          int
	tunnelPort    int // the upstream's second listener, which the policy passes through blind
	token         string
	dir           string
	upRoots       *x509.CertPool // trusts the upstream's CA: direct clients and the gateway
	pemUpstreamCA []byte         // the same CA in PEM, for the gateways' process and squid
	tenantCAs     *x509.CertPool // trusts the tenant's CA: clients through the gateway
	gw            *gateway.Gateway
	gwScan        *gateway.Gateway
	upstream      *http.Server
	cold          atomic.Int64
	requests      atomic.Uint64 // runs of the varied-body cases, so that no two share a body
	kex           string        // the gateways' tls.sandbox_key_exchange; "": the default
	child         *child        // the gateways' process; nil: they run in this one
	squid         *squid

	mu      sync.Mutex
	lastErr error
	last    Run
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

// Options say where Start runs the proxies. The zero value runs the gateways in this
// process and no squid.
type Options struct {
	// Child, if set, is the command line (program and arguments) of a process that runs
	// ServeGateways; Start appends the directory to it. The gateways' CPU time and memory
	// are then read from /proc for that process alone. Empty: in this process, where
	// their CPU time cannot be told from the client's.
	Child []string
	// Squid, if set, is the squid binary to measure beside the gateway (squid.go).
	Squid string
	// SandboxKeyExchange is the gateways' tls.sandbox_key_exchange: the key exchange
	// of the client's TLS with them. Empty: left out of their config (the default,
	// post-quantum).
	SandboxKeyExchange string
}

// Start starts the upstream and the gateways in this process.
func Start() (*Env, error) { return StartWith(Options{}) }

// StartWith starts the upstream, the gateways and, if asked, squid. Temporary files (the
// policy, the token and the tenant CA) live in a directory that Close removes.
func StartWith(opts Options) (_ *Env, err error) {
	e := &Env{kex: opts.SandboxKeyExchange}
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
	if err := e.writeGatewayFiles(opts.SandboxKeyExchange); err != nil {
		return nil, err
	}
	if len(opts.Child) > 0 {
		if e.child, err = startChild(opts.Child, e.dir); err != nil {
			return nil, err
		}
		e.ProxyAddr, e.ScanProxyAddr = e.child.proxy, e.child.scanProxy
	} else if err := e.serveGateways(); err != nil {
		return nil, err
	}
	if opts.Squid != "" {
		if e.squid, err = startSquid(opts.Squid, e.port, e.pemUpstreamCA); err != nil {
			return nil, err
		}
		e.SquidAddr = e.squid.addr
	}
	return e, nil
}

// Close stops squid, the gateways (and their process) and the upstream, and removes the
// temporary directory.
func (e *Env) Close() error {
	var errs []error
	if e.squid != nil {
		errs = append(errs, e.squid.stop())
	}
	if e.child != nil {
		errs = append(errs, e.child.stop())
	}
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
	cert, caPEM, err := upstreamCert()
	if err != nil {
		return err
	}
	e.pemUpstreamCA = caPEM
	e.upRoots = x509.NewCertPool()
	e.upRoots.AppendCertsFromPEM(caPEM)
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
	mux.HandleFunc("POST "+pathTurn, func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil || n != int64(TurnSize) {
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
	lt, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l.Close()
		return fmt.Errorf("bench: upstream listener: %w", err)
	}
	e.UpstreamAddr = l.Addr().String()
	e.port = l.Addr().(*net.TCPAddr).Port
	e.tunnelPort = lt.Addr().(*net.TCPAddr).Port
	e.upstream = &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
	}
	go e.upstream.ServeTLS(l, "", "")
	go e.upstream.ServeTLS(lt, "", "")
	return nil
}

// upstreamCert mints a throwaway CA and a leaf for Domain and *.Domain, ECDSA P-256 like
// the gateway's leaves, so that both paths pay for the same kind of handshake signature.
// It returns the leaf and the CA's certificate in PEM.
func upstreamCert() (tls.Certificate, []byte, error) {
	fail := func(what string, err error) (tls.Certificate, []byte, error) {
		return tls.Certificate{}, nil, fmt.Errorf("bench: upstream %s: %w", what, err)
	}
	caDER, caKey, err := benchCA("sluice bench upstream CA")
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("bench: upstream %w", err)
	}
	now := time.Now()
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
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caPEM, nil
}

// benchCA mints a signing CA of the bench, ECDSA P-256 like the tenant CA, and
// returns its certificate (DER) and key.
func benchCA(name string) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: name},
		// Backdated so that a clock a little behind still accepts it.
		NotBefore: now.Add(-time.Hour),
		// A day outlives any benchmark run.
		NotAfter: now.Add(24 * time.Hour),
		// Signing leaves is all it does, and no intermediates under it.
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	return der, key, nil
}

// domainResolver resolves Domain and every name under it to addr, and nothing else.
type domainResolver struct{ addr netip.Addr }

func (r domainResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if inDomain(host) {
		return []netip.Addr{r.addr}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

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
	case Gateway, GatewayScan, Tunnel:
		proxy, roots := e.ProxyAddr, e.tenantCAs
		switch v {
		case GatewayScan:
			proxy = e.ScanProxyAddr
		case Tunnel:
			roots = e.upRoots // blind: the upstream's own certificate comes through
		}
		tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword(Tenant, e.token), Host: proxy})
		tr.TLSClientConfig = &tls.Config{RootCAs: roots}
	case Squid:
		tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: e.SquidAddr})
		tr.TLSClientConfig = &tls.Config{RootCAs: e.squid.roots}
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

// URL returns the https URL of path on host at the upstream's port that v reaches: the
// second, passed-through one for Tunnel.
func (e *Env) URL(v Via, host, path string) string {
	port := e.port
	if v == Tunnel {
		port = e.tunnelPort
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port)) + path
}

// ColdHost returns a name under Domain that no earlier call returned, so that the
// gateway has no leaf for it yet.
func (e *Env) ColdHost() string {
	return "n" + strconv.FormatInt(e.cold.Add(1), 10) + "." + Domain
}
