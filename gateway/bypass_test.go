package gateway_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/internal/testnet"
	"github.com/sluice-egress/sluice/scanner"
)

// The tests in this file try to get around the gateway's checks with
// hand-written HTTP/1.1 on raw sockets: request smuggling, parser
// differentials, authority and path spellings, hop-by-hop tricks and
// protocol switches. Each case states what must never reach the upstream.

// bypassPolicy: %[1]d is the TLS upstream's port, %[2]d the plain one's.
// evil.example.test resolves to the same upstream but is allowed nowhere:
// a request the upstream records for it got around the checks.
const bypassPolicy = `
version: 1
upstream:
  hosts:
    api.example.test: 127.0.0.1
    other.example.test: 127.0.0.1
    ws.example.test: 127.0.0.1
    evil.example.test: 127.0.0.1
    plain.example.test: 127.0.0.1
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: api.example.test
            ports: [%[1]d]
            methods: [GET, POST]
            paths: ["/v1/"]
          - host: other.example.test
            ports: [%[1]d]
          - host: ws.example.test
            ports: [%[1]d]
            websocket: true
          - host: plain.example.test
            ports: [%[2]d]
            methods: [GET, POST]
            paths: ["/v1/"]
`

// seenReq is one request as an upstream parsed it off the wire.
type seenReq struct {
	method, uri, host string
	header, trailer   http.Header
	body              string
}

// rawUpstream parses requests with net/http's wire reader (not a server that
// might normalise them) and records each one once its body, trailers
// included, has been read.
type rawUpstream struct {
	port int
	mu   sync.Mutex
	seen []seenReq
	raw  strings.Builder // every byte received, all connections
}

func (u *rawUpstream) requests() []seenReq {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenReq(nil), u.seen...)
}

func (u *rawUpstream) bytes() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.raw.String()
}

type recordWriter struct{ u *rawUpstream }

func (w recordWriter) Write(p []byte) (int, error) {
	w.u.mu.Lock()
	w.u.raw.Write(p)
	w.u.mu.Unlock()
	return len(p), nil
}

// startRaw serves on loopback, with TLS when cfg is not nil. Paths ending
// in /switch answer 101 to anything; /flood sends many 1xx first.
func startRaw(t testing.TB, cfg *tls.Config) *rawUpstream {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		cfg = cfg.Clone()
		cfg.NextProtos = []string{"http/1.1"} // parse HTTP/1.1 ourselves
		l = tls.NewListener(l, cfg)
	}
	t.Cleanup(func() { l.Close() })
	u := &rawUpstream{port: l.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	return u
}

func (u *rawUpstream) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(io.TeeReader(c, recordWriter{u}))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		u.mu.Lock()
		u.seen = append(u.seen, seenReq{method: req.Method, uri: req.RequestURI, host: req.Host,
			header: req.Header, trailer: req.Trailer, body: string(body)})
		u.mu.Unlock()
		switch {
		case strings.HasSuffix(req.URL.Path, "/switch"):
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			io.Copy(c, br) // echo whatever comes: bytes past the checks
			return
		case strings.HasSuffix(req.URL.Path, "/flood"):
			for range 50 {
				io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
			}
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Upstream-Host: %s\r\n\r\nok", req.Host)
	}
}

// bypassWorld is a gateway with a real scanner in front of raw upstreams.
type bypassWorld struct {
	gw        *gateway.Gateway
	proxyAddr string
	token     string
	cas       *ca.Store
	sink      *recordingSink
	up        *rawUpstream // TLS
	plain     *rawUpstream
	secret    string // a fake GitHub token the scanner blocks
}

func newBypassWorld(t *testing.T) *bypassWorld {
	t.Helper()
	dir := t.TempDir()
	b := &bypassWorld{token: randomToken(t), sink: &recordingSink{}}
	upCA := testnet.NewTestCA(t, "upstream")
	b.up = startRaw(t, upCA.ServerTLS(t, "api.example.test", "other.example.test", "ws.example.test", "evil.example.test"))
	b.plain = startRaw(t, nil)
	engine := acmePolicy(t, dir, b.token, fmt.Sprintf(bypassPolicy, b.up.port, b.plain.port))
	secret, err := scanner.FakeSecret("github-pat")
	if err != nil {
		t.Fatal(err)
	}
	b.secret = secret
	b.cas = &ca.Store{Dir: filepath.Join(dir, "ca")}
	b.gw = &gateway.Gateway{
		Policy:  engine,
		Leaf:    func(tenant, host string) (*tls.Certificate, error) { return mustAuthority(t, b.cas, tenant).Leaf(host) },
		Dialer:  &guard.Dialer{Hosts: engine.UpstreamHosts(), Deny: withoutLoopback(guard.DefaultDeny()), Self: func() []netip.Addr { return nil }},
		RootCAs: upCA.Pool(),
		Events:  b.sink,
		Scanner: &scanner.Scanner{},
	}
	b.proxyAddr = serveOnLoopback(t, b.gw)
	return b
}

func (b *bypassWorld) auth() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("acme:"+b.token))
}

// authority is host:port of the TLS upstream.
func (b *bypassWorld) authority(host string) string {
	return net.JoinHostPort(host, strconv.Itoa(b.up.port))
}

// proxy writes raw to the proxy port and returns the connection and the
// first response, or a nil response when the gateway closed without one.
func (b *bypassWorld) proxy(t *testing.T, raw string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", b.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, raw)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return c, br, nil
	}
	return c, br, resp
}

// tunnel opens an inspected tunnel to host on the TLS upstream's port, with
// SNI sni, offering protos by ALPN.
func (b *bypassWorld) tunnel(t *testing.T, connectTo, sni string, protos ...string) *tls.Conn {
	t.Helper()
	c, br, resp := b.proxy(t, fmt.Sprintf("CONNECT %[1]s HTTP/1.1\r\nHost: %[1]s\r\nProxy-Authorization: %s\r\n\r\n", connectTo, b.auth()))
	if resp == nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s refused: %v", connectTo, resp)
	}
	if br.Buffered() > 0 {
		t.Fatal("bytes after the CONNECT answer")
	}
	roots := x509.NewCertPool()
	roots.AddCert(mustAuthority(t, b.cas, "acme").Certificate())
	if len(protos) == 0 {
		protos = []string{"http/1.1"}
	}
	tc := tls.Client(c, &tls.Config{ServerName: sni, RootCAs: roots, NextProtos: protos})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return tc
}

// exchange writes raw into a fresh tunnel to host and reads up to n final
// responses (1xx skipped), fewer when the gateway closes the connection.
func (b *bypassWorld) exchange(t *testing.T, host, raw string, n int) []*http.Response {
	t.Helper()
	tc := b.tunnel(t, b.authority(host), host)
	io.WriteString(tc, raw)
	br := bufio.NewReader(tc)
	var out []*http.Response
	for len(out) < n {
		tc.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		out = append(out, resp)
	}
	return out
}

func statuses(rs []*http.Response) string {
	var s []string
	for _, r := range rs {
		s = append(s, strconv.Itoa(r.StatusCode)+" "+r.Header.Get("Sluice-Reason"))
	}
	return strings.Join(s, ", ")
}

// forbidden reports why a request the upstream saw should never have got
// there: a host other than the allowed ones, a path outside /v1/ on
// api.example.test, a method not allowed there, or the secret anywhere.
func (b *bypassWorld) forbidden(r seenReq) string {
	host, _, err := net.SplitHostPort(r.host)
	if err != nil {
		host = r.host
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	switch {
	case host != "api.example.test" && host != "other.example.test" && host != "ws.example.test" && host != "plain.example.test":
		return "host " + r.host
	case host == "api.example.test" && !strings.HasPrefix(r.uri, "/v1/"):
		return "path " + r.uri
	case host == "api.example.test" && r.method != "GET" && r.method != "POST":
		return "method " + r.method
	}
	return ""
}

// checkUpstream fails for every request the upstreams should not have seen
// and for the secret or the proxy token in any byte they received.
func (b *bypassWorld) checkUpstream(t *testing.T) {
	t.Helper()
	for _, u := range []*rawUpstream{b.up, b.plain} {
		for _, r := range u.requests() {
			if why := b.forbidden(r); why != "" {
				t.Errorf("upstream received %s %s (Host %s): %s", r.method, r.uri, r.host, why)
			}
		}
		raw := strings.ToLower(u.bytes())
		if strings.Contains(raw, strings.ToLower(b.secret)) {
			t.Errorf("the secret reached the upstream")
		}
		if strings.Contains(raw, strings.ToLower(b.token)) || strings.Contains(raw, strings.ToLower(b.auth()[len("Basic "):])) {
			t.Errorf("the proxy credentials reached the upstream")
		}
	}
}

// Requests written by hand inside an inspected tunnel: each must be refused,
// or forwarded exactly as it was checked.
func TestBypassInsideTunnel(t *testing.T) {
	b := newBypassWorld(t)
	a := b.authority("api.example.test")
	o := b.authority("other.example.test")
	port := strconv.Itoa(b.up.port)
	s := b.secret
	tests := []struct {
		name, host, raw string
		want            []string // status and Sluice-Reason of each response
		// upstream, if set, checks the last request the upstream saw.
		upstream func(r seenReq) string
	}{
		// Desync: whatever the gateway's parser makes of the framing is
		// what it checks and re-frames; the smuggled request is checked too.
		{name: "Content-Length and Transfer-Encoding", host: "api.example.test",
			raw:  "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /admin HTTP/1.1\r\nHost: " + a + "\r\n\r\n",
			want: []string{"200 ", "403 path-not-allowed"}},
		{name: "duplicate Content-Length", host: "api.example.test",
			raw:  "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nContent-Length: 0\r\nContent-Length: 40\r\n\r\nGET /admin HTTP/1.1\r\nHost: " + a + "\r\n\r\n",
			want: []string{"400 malformed-request"}},
		{name: "chunked, identity", host: "api.example.test",
			raw:  "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
			want: []string{"501 malformed-request"}},
		{name: "obs-fold hides a secret", host: "api.example.test",
			raw:  "GET /v1/x HTTP/1.1\r\nHost: " + a + "\r\nX-A: a\r\n " + s + "\r\n\r\n",
			want: []string{"403 secret-detected"}},
		// Trailers arrive after the scan: they are dropped, names and values.
		{name: "secret in a declared trailer", host: "api.example.test",
			raw:  "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nTransfer-Encoding: chunked\r\nTrailer: X-Leak\r\n\r\n2\r\nhi\r\n0\r\nX-Leak: " + s + "\r\n\r\n",
			want: []string{"200 "}, upstream: noTrailer},
		{name: "secret in an undeclared trailer", host: "api.example.test",
			raw:  "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nX-Leak: " + s + "\r\n\r\n",
			want: []string{"200 "}, upstream: noTrailer},
		{name: "secret as a trailer name", host: "api.example.test",
			raw:  "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nTransfer-Encoding: chunked\r\nTrailer: " + s + "\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
			want: []string{"200 "}, upstream: noTrailer},
		// Other request forms.
		{name: "HTTP/1.0", host: "api.example.test",
			raw: "GET /admin HTTP/1.0\r\nHost: " + a + "\r\n\r\n", want: []string{"403 path-not-allowed"}},
		{name: "HTTP/1.0 without Host", host: "api.example.test",
			raw: "GET /v1/x HTTP/1.0\r\n\r\n", want: []string{"403 domain-fronting"}},
		{name: "absolute-form names another host", host: "api.example.test",
			raw: "GET https://evil.example.test:" + port + "/v1/x HTTP/1.1\r\nHost: " + a + "\r\n\r\n", want: []string{"403 domain-fronting"}},
		{name: "absolute-form wins over a Host header", host: "api.example.test",
			raw: "GET https://" + a + "/v1/x HTTP/1.1\r\nHost: evil.example.test\r\n\r\n", want: []string{"200 "},
			upstream: hostIs("api.example.test:" + port)},
		{name: "CONNECT inside the tunnel", host: "other.example.test",
			raw: "CONNECT " + o + " HTTP/1.1\r\nHost: " + o + "\r\n\r\n", want: []string{"403 method-not-allowed"}},
		{name: "CONNECT inside the tunnel to another host", host: "other.example.test",
			raw: "CONNECT evil.example.test:443 HTTP/1.1\r\nHost: " + o + "\r\n\r\n", want: []string{"403 domain-fronting"}},
		{name: "h2c prior knowledge", host: "other.example.test",
			raw: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", want: []string{"403 domain-fronting"}},
		{name: "Upgrade: WebSocket on a host without websocket", host: "other.example.test",
			raw: "GET /switch HTTP/1.1\r\nHost: " + o + "\r\nUpgrade: WebSocket\r\nConnection: upgrade\r\n\r\n", want: []string{"403 websocket-not-allowed"}},
		{name: "Upgrade: websocket, h2c", host: "ws.example.test",
			raw: "GET /switch HTTP/1.1\r\nHost: " + b.authority("ws.example.test") + "\r\nUpgrade: websocket, h2c\r\nConnection: upgrade\r\n\r\n", want: []string{"403 upgrade-not-allowed"}},
		{name: "two Upgrade headers", host: "ws.example.test",
			raw: "GET /switch HTTP/1.1\r\nHost: " + b.authority("ws.example.test") + "\r\nUpgrade: websocket\r\nUpgrade: h2c\r\nConnection: upgrade\r\n\r\n", want: []string{"101 "},
			upstream: func(r seenReq) string {
				if v := r.header.Values("Upgrade"); len(v) != 1 || v[0] != "websocket" {
					return fmt.Sprintf("Upgrade %q", v)
				}
				return ""
			}},
		// The upstream switches protocols on a request that asked for none:
		// the gateway must not splice, and the next request never leaves.
		{name: "101 to a plain request", host: "other.example.test",
			raw:  "GET /switch HTTP/1.1\r\nHost: " + o + "\r\n\r\nGET /x HTTP/1.1\r\nHost: evil.example.test\r\n\r\n",
			want: []string{"502 upstream-unreachable"}},
		{name: "1xx flood", host: "other.example.test",
			raw: "GET /flood HTTP/1.1\r\nHost: " + o + "\r\n\r\n", want: []string{"200 "}},
		// Host spellings: the upstream gets the checked, normalised name.
		{name: "Host upper case with trailing dot", host: "api.example.test",
			raw: "GET /v1/x HTTP/1.1\r\nHost: API.example.test.:" + port + "\r\n\r\n", want: []string{"200 "},
			upstream: hostIs("api.example.test:" + port)},
		{name: "Host port with a leading zero", host: "api.example.test",
			raw: "GET /v1/x HTTP/1.1\r\nHost: api.example.test:0" + port + "\r\n\r\n", want: []string{"200 "},
			upstream: hostIs("api.example.test:" + port)},
		{name: "Host without port", host: "api.example.test",
			raw: "GET /v1/x HTTP/1.1\r\nHost: api.example.test\r\n\r\n", want: []string{"200 "},
			upstream: hostIs("api.example.test")},
		{name: "Host with userinfo", host: "api.example.test",
			raw: "GET /v1/x HTTP/1.1\r\nHost: evil@" + a + "\r\n\r\n", want: []string{"400 malformed-request"}},
		{name: "Host with the implicit port 443", host: "api.example.test",
			raw: "GET /v1/x HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n", want: []string{"403 domain-fronting"}},
		{name: "Host as an IPv6 literal", host: "api.example.test",
			raw: "GET /v1/x HTTP/1.1\r\nHost: [::ffff:127.0.0.1]:" + port + "\r\n\r\n", want: []string{"403 domain-fronting"}},
		// Methods: the one checked is the one forwarded, overrides included.
		{name: "method override header", host: "api.example.test",
			raw: "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nX-HTTP-Method-Override: DELETE\r\nContent-Length: 0\r\n\r\n", want: []string{"403 method-not-allowed"}},
		{name: "method override in the query", host: "api.example.test",
			raw: "POST /v1/x?_method=delete HTTP/1.1\r\nHost: " + a + "\r\nContent-Length: 0\r\n\r\n", want: []string{"403 method-not-allowed"}},
		{name: "method override in a form body", host: "api.example.test",
			raw: "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 27\r\n\r\nname=widget&_method=DELETE&", want: []string{"403 method-not-allowed"}},
		{name: "form body without an override", host: "api.example.test",
			raw: "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\n\r\nname=widget", want: []string{"200 "},
			upstream: func(r seenReq) string {
				if r.body != "name=widget" {
					return "body " + strconv.Quote(r.body)
				}
				return ""
			}},
		{name: "malformed form body", host: "api.example.test",
			raw: "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 6\r\n\r\na=%zz&", want: []string{"403 method-not-allowed"}},
		{name: "method override to an allowed method", host: "api.example.test",
			raw: "POST /v1/x HTTP/1.1\r\nHost: " + a + "\r\nX-HTTP-Method: GET\r\nContent-Length: 0\r\n\r\n", want: []string{"200 "}},
		{name: "lower-case method", host: "api.example.test",
			raw: "post /v1/x HTTP/1.1\r\nHost: " + a + "\r\nContent-Length: 0\r\n\r\n", want: []string{"200 "},
			upstream: func(r seenReq) string {
				if r.method != "POST" {
					return "method " + r.method
				}
				return ""
			}},
		{name: "lower-case refused method", host: "api.example.test",
			raw: "delete /v1/x HTTP/1.1\r\nHost: " + a + "\r\n\r\n", want: []string{"403 method-not-allowed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := len(b.up.requests())
			got := statuses(b.exchange(t, tc.host, tc.raw, len(tc.want)))
			if want := strings.Join(tc.want, ", "); got != want {
				t.Errorf("responses %q, want %q", got, want)
			}
			if tc.upstream != nil {
				seen := b.up.requests()[n:]
				if len(seen) == 0 {
					t.Fatal("the upstream saw nothing")
				}
				if why := tc.upstream(seen[len(seen)-1]); why != "" {
					t.Errorf("upstream saw %s", why)
				}
			}
			b.checkUpstream(t)
		})
	}
}

func noTrailer(r seenReq) string {
	if len(r.trailer) > 0 || r.header.Get("Trailer") != "" {
		return fmt.Sprintf("trailers %v %q", r.trailer, r.header.Get("Trailer"))
	}
	return ""
}

func hostIs(want string) func(seenReq) string {
	return func(r seenReq) string {
		if r.host != want {
			return "Host " + r.host + ", want " + want
		}
		return ""
	}
}

// The path the policy checks is the path the upstream gets, and no spelling
// of a path outside /v1/ passes as one inside it.
func TestBypassPaths(t *testing.T) {
	b := newBypassWorld(t)
	tests := []struct{ path, want, upstream string }{
		{"/v1/%2e%2e/admin", "403 path-not-allowed", ""},
		{"/v1/%2E%2E/admin", "403 path-not-allowed", ""},
		{"//admin", "403 path-not-allowed", ""},
		{"/v1/..;/admin", "403 path-not-allowed", ""},
		{`/v1/..\admin`, "403 path-not-allowed", ""},
		{"/v1/%5c..%5cadmin", "403 path-not-allowed", ""},
		{"/v1/%252e%252e/admin", "403 path-not-allowed", ""},
		{"/v1/#/../admin", "403 path-not-allowed", ""},
		{"/v10/x", "403 path-not-allowed", ""},
		{"/v1", "403 path-not-allowed", ""},
		// %2F decoded, /v1%2Fadmin is under /v1/; to a server that keeps
		// %2F in the segment it is the root-level "v1%2Fadmin".
		{"/v1%2Fadmin", "403 path-not-allowed", ""},
		{"/v1%2fadmin", "403 path-not-allowed", ""},
		{"/v1/a%2Fb", "200 ", "/v1/a%2Fb"},
		{"/v1/%41?q=/../admin", "200 ", "/v1/%41?q=/../admin"},
	}
	a := b.authority("api.example.test")
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			n := len(b.up.requests())
			got := statuses(b.exchange(t, "api.example.test", "GET "+tc.path+" HTTP/1.1\r\nHost: "+a+"\r\n\r\n", 1))
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			seen := b.up.requests()[n:]
			switch {
			case tc.upstream == "" && len(seen) > 0:
				t.Errorf("upstream saw %s", seen[0].uri)
			case tc.upstream != "" && (len(seen) != 1 || seen[0].uri != tc.upstream):
				t.Errorf("upstream saw %v, want %s", seen, tc.upstream)
			}
		})
	}
	// The same through the plain-HTTP proxy path.
	pa := "plain.example.test:" + strconv.Itoa(b.plain.port)
	for _, p := range []string{"/v1%2Fadmin", "/v1/%2e%2e/admin", "/v10/"} {
		_, _, resp := b.proxy(t, "GET http://"+pa+p+" HTTP/1.1\r\nHost: "+pa+"\r\nProxy-Authorization: "+b.auth()+"\r\n\r\n")
		if resp == nil || resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != "path-not-allowed" {
			t.Errorf("plain %s: %v", p, resp)
		}
	}
	b.checkUpstream(t)
}

// Requests to the proxy port itself: plain HTTP in absolute form and
// CONNECT authorities. The host checked is the host dialed, and the proxy
// credentials never travel on.
func TestBypassProxyPort(t *testing.T) {
	b := newBypassWorld(t)
	pp := strconv.Itoa(b.plain.port)
	up := strconv.Itoa(b.up.port)
	pa := "plain.example.test:" + pp
	auth := "Proxy-Authorization: " + b.auth() + "\r\n"
	tests := []struct{ name, raw, want string }{
		{"Host header differs from the URL", "GET http://" + pa + "/v1/x HTTP/1.1\r\nHost: evil.example.test:" + pp + "\r\n" + auth + "\r\n", "200 "},
		{"userinfo names the allowed host", "GET http://" + pa + "@evil.example.test:" + pp + "/v1/x HTTP/1.1\r\nHost: " + pa + "\r\n" + auth + "\r\n", "403 host-not-allowed"},
		{"percent-encoded host", "GET http://evil%2eexample.test:" + pp + "/v1/x HTTP/1.1\r\nHost: " + pa + "\r\n" + auth + "\r\n", "400 malformed-request"},
		{"backslash before @", "GET http://evil.example.test:" + pp + "\\@" + pa + "/v1/x HTTP/1.1\r\nHost: " + pa + "\r\n" + auth + "\r\n", "400 malformed-request"},
		{"very long URL", "GET http://" + pa + "/v1/" + strings.Repeat("a", 2<<20) + " HTTP/1.1\r\nHost: " + pa + "\r\n" + auth + "\r\n", "431 header-too-large"},
		{"Connection names Proxy-Authorization", "GET http://" + pa + "/v1/x HTTP/1.1\r\nHost: " + pa + "\r\nConnection: keep-alive, Proxy-Authorization\r\n" + auth + "\r\n", "200 "},
		{"Proxy-Authorization twice", "GET http://" + pa + "/v1/x HTTP/1.1\r\nHost: " + pa + "\r\n" + auth + "proxy-authorization: " + b.auth() + "\r\n\r\n", "200 "},
		{"https in absolute form", "GET https://api.example.test:" + up + "/v1/x HTTP/1.1\r\nHost: api.example.test\r\n" + auth + "\r\n", "400 not-a-proxy-request"},
		{"h2c upgrade", "GET http://" + pa + "/v1/x HTTP/1.1\r\nHost: " + pa + "\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n" + auth + "\r\n", "403 upgrade-not-allowed"},
		{"h2c prior knowledge", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "407 proxy-auth-required"},
		{"CONNECT with userinfo", "CONNECT api.example.test:" + up + "@evil.example.test:" + up + " HTTP/1.1\r\nHost: api.example.test:" + up + "\r\n" + auth + "\r\n", "403 host-not-allowed"},
		{"CONNECT IPv4-mapped IPv6", "CONNECT [::ffff:127.0.0.1]:" + up + " HTTP/1.1\r\n" + auth + "\r\n", "403 host-not-allowed"},
		{"CONNECT IPv6 zone", "CONNECT [fe80::1%25eth0]:" + up + " HTTP/1.1\r\n" + auth + "\r\n", "400 bad-host"},
		{"CONNECT upper case, trailing dot", "CONNECT API.EXAMPLE.TEST.:" + up + " HTTP/1.1\r\n" + auth + "\r\n", "200 "},
		{"CONNECT HTTP/1.0", "CONNECT api.example.test:" + up + " HTTP/1.0\r\n" + auth + "\r\n", "200 "},
		{"CONNECT port 0", "CONNECT api.example.test:0 HTTP/1.1\r\n" + auth + "\r\n", "400 bad-host"},
		{"CONNECT port 65536", "CONNECT api.example.test:65536 HTTP/1.1\r\n" + auth + "\r\n", "400 bad-host"},
		{"CONNECT port + 65536", "CONNECT api.example.test:" + strconv.Itoa(b.up.port+65536) + " HTTP/1.1\r\n" + auth + "\r\n", "400 bad-host"},
		{"CONNECT without port", "CONNECT api.example.test HTTP/1.1\r\n" + auth + "\r\n", "400 bad-host"},
		{"CONNECT origin-form, Host elsewhere", "CONNECT /x HTTP/1.1\r\nHost: evil.example.test:" + up + "\r\n" + auth + "\r\n", "403 host-not-allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, resp := b.proxy(t, tc.raw)
			got := "closed"
			if resp != nil {
				got = strconv.Itoa(resp.StatusCode) + " " + resp.Header.Get("Sluice-Reason")
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	b.checkUpstream(t)
}

// A body sent after the gateway's 100 Continue is scanned before anything
// is forwarded.
func TestBypassExpectContinue(t *testing.T) {
	b := newBypassWorld(t)
	a := b.authority("api.example.test")
	tc := b.tunnel(t, a, "api.example.test")
	body := "token=" + b.secret
	fmt.Fprintf(tc, "POST /v1/x HTTP/1.1\r\nHost: %s\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", a, len(body))
	tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(tc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("want 100 Continue first: %v %v", resp, err)
	}
	if n := len(b.up.requests()); n != 0 {
		t.Fatalf("upstream saw %d requests before the body was sent", n)
	}
	io.WriteString(tc, body)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != "secret-detected" {
		t.Fatalf("body with a secret after 100 Continue: %v %v", resp, err)
	}
	b.checkUpstream(t)
}

// With HTTP/2 disabled the gateway never speaks it to a client: a client
// that offers only h2 gets no protocol, never h2.
func TestBypassNoH2ToClientWhenDisabled(t *testing.T) {
	b := newBypassWorld(t)
	b.gw.HTTP2.Disable = true
	a := b.authority("api.example.test")
	c, _, resp := b.proxy(t, fmt.Sprintf("CONNECT %[1]s HTTP/1.1\r\nHost: %[1]s\r\nProxy-Authorization: %s\r\n\r\n", a, b.auth()))
	if resp == nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v", resp)
	}
	roots := x509.NewCertPool()
	roots.AddCert(mustAuthority(t, b.cas, "acme").Certificate())
	tc := tls.Client(c, &tls.Config{ServerName: "api.example.test", RootCAs: roots, NextProtos: []string{"h2"}})
	tc.Handshake() // refused (no common protocol) or without ALPN: both fine
	if p := tc.ConnectionState().NegotiatedProtocol; p == "h2" {
		t.Fatal("gateway negotiated h2 with the client")
	}
}
