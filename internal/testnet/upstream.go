package testnet

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// maxRecordedBody is how much of each request body an Upstream keeps.
const maxRecordedBody = 64 << 10

// RecordedRequest is what an Upstream saw of one request.
type RecordedRequest struct {
	Method string
	Host   string // the Host header (or :authority)
	Path   string
	Header http.Header
	// Body holds the first 64 KiB of the body as the handler has read it so far; the default
	// handler reads it all before answering.
	Body []byte
	// TLS is the connection's state, nil for plain HTTP.
	TLS *tls.ConnectionState
}

// Upstream is an HTTPS (or plain HTTP) server in the internet namespace that records what it
// receives.
type Upstream struct {
	// URL is "https://ADDR" or "http://ADDR", without the port when it is the scheme's default.
	URL string
	// Addr is the listening address, with the port chosen when the caller asked for port 0.
	Addr string
	// Requests counts requests received.
	Requests atomic.Int64

	mu   sync.Mutex
	seen []*RecordedRequest
	srv  *http.Server
}

// Seen returns copies of the requests received so far, in arrival order.
func (u *Upstream) Seen() []RecordedRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]RecordedRequest, len(u.seen))
	for i, r := range u.seen {
		out[i] = *r
		out[i].Header = r.Header.Clone()
		out[i].Body = append([]byte(nil), r.Body...)
	}
	return out
}

// Close stops the server; t.Cleanup does it too.
func (u *Upstream) Close() error { return u.srv.Close() }

// recordingBody copies what the handler reads into the request's record.
type recordingBody struct {
	io.ReadCloser
	u   *Upstream
	rec *RecordedRequest
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.u.mu.Lock()
		if room := maxRecordedBody - len(b.rec.Body); room > 0 {
			b.rec.Body = append(b.rec.Body, p[:min(n, room)]...)
		}
		b.u.mu.Unlock()
	}
	return n, err
}

func (u *Upstream) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &RecordedRequest{
			Method: r.Method,
			Host:   r.Host,
			Path:   r.URL.Path,
			Header: r.Header.Clone(),
			TLS:    r.TLS,
		}
		u.mu.Lock()
		u.seen = append(u.seen, rec)
		u.mu.Unlock()
		u.Requests.Add(1)
		r.Body = &recordingBody{ReadCloser: r.Body, u: u, rec: rec}
		h.ServeHTTP(w, r)
	})
}

// helloHandler is the default upstream: it reads the body and answers "hello from <host>".
func helloHandler(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "hello from "+r.Host)
}

// ServeUpstream serves h in the internet namespace on addr (e.g. "198.51.100.10:443" or
// "[2001:db8:2::10]:443"; the address is added with AddUpstreamAddr if needed). With tlsConfig
// nil it serves plain HTTP, otherwise HTTPS with h2 and HTTP/1.1. A nil h answers 200 "hello from <host>". Every request
// is recorded (see Upstream.Seen) before h runs. The server stops in t.Cleanup.
func (w *World) ServeUpstream(t testing.TB, addr string, tlsConfig *tls.Config, h http.Handler) *Upstream {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatalf("testnet: upstream address %q: want IP:port: %v", addr, err)
	}
	if !ap.Addr().IsUnspecified() {
		w.AddUpstreamAddr(t, ap.Addr())
	}
	ln, err := w.Internet.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if h == nil {
		h = http.HandlerFunc(helloHandler)
	}
	u := &Upstream{Addr: ln.Addr().String()}
	u.srv = &http.Server{
		Handler:           u.record(h),
		ReadHeaderTimeout: 10 * time.Second,
	}
	scheme, defPort := "http", 80
	if tlsConfig != nil {
		scheme, defPort = "https", 443
		u.srv.TLSConfig = tlsConfig.Clone()
	}
	host := u.Addr
	if port := ln.Addr().(*net.TCPAddr).Port; port == defPort {
		host = ap.Addr().String()
		if ap.Addr().Is6() {
			host = "[" + host + "]" // as a URL writes an IPv6 literal
		}
	}
	u.URL = (&url.URL{Scheme: scheme, Host: host}).String()

	done := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			// ServeTLS (not tls.NewListener) so that net/http sets up HTTP/2.
			done <- u.srv.ServeTLS(ln, "", "")
		} else {
			done <- u.srv.Serve(ln)
		}
	}()
	t.Cleanup(func() {
		_ = u.srv.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("testnet: upstream %s: %v", u.Addr, err)
		}
	})
	return u
}

// HTTPClient returns a client whose connections start in the namespace: through proxyURL
// when it is not nil, directly otherwise. roots (nil: the system roots) verify the servers'
// (or, through a MITM proxy, the proxy's) certificates. Hosts in URLs must be IP literals
// unless a proxy is used, since names would be resolved outside the namespace.
func (n *NS) HTTPClient(proxyURL *url.URL, roots *x509.CertPool) *http.Client {
	tr := &http.Transport{
		DialContext:         n.DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConns:        10,
		IdleConnTimeout:     30 * time.Second,
	}
	if proxyURL != nil {
		tr.Proxy = http.ProxyURL(proxyURL)
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// SandboxHTTPClient returns a client that connects from the sandbox namespace through the
// proxy at proxyURL (nil: directly, which must fail), trusting roots (nil: system roots).
func (w *World) SandboxHTTPClient(proxyURL *url.URL, roots *x509.CertPool) *http.Client {
	return w.Sandbox.HTTPClient(proxyURL, roots)
}

// HostPort joins an address and a port, e.g. HostPort(w.GatewaySandboxAddr, 3128).
func HostPort(a netip.Addr, port int) string {
	return net.JoinHostPort(a.String(), strconv.Itoa(port))
}
