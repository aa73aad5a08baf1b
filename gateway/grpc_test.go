package gateway_test

import (
	"bufio"
	"bytes"
	"context"
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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/encoding/gzip" // the client and server may compress with gzip
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/internal/testnet"
	"github.com/sluice-egress/sluice/scanner"
)

// grpcPolicy allows two of the health service's methods and every method
// of the echo service; %[1]d is the gRPC server's port.
const grpcPolicy = `
version: 1
upstream:
  hosts:
    grpc.example.test: 127.0.0.1
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: grpc.example.test
            ports: [%[1]d]
            methods: [POST]
            paths: ["/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch", "/sluice.test.Echo/"]
`

// grpcWorld is a real gRPC server (health service, plus an echo service of
// raw bytes) behind a gateway with a scanner, on loopback with real TLS.
type grpcWorld struct {
	t         testing.TB
	gw        *gateway.Gateway
	proxyAddr string
	authority string
	token     string
	cas       *ca.Store
	sink      *recordingSink
	health    *health.Server
	secret    string
	upRoots   *x509.CertPool // trusts the gRPC server directly
	calls     atomic.Int64   // RPCs the server started handling

	mu       sync.Mutex
	received [][]byte // echo messages the server received
}

func newGRPCWorld(t testing.TB) *grpcWorld {
	t.Helper()
	w := &grpcWorld{t: t, sink: &recordingSink{}, token: randomToken(t)}
	secret, err := scanner.FakeSecret("github-pat")
	if err != nil {
		t.Fatal(err)
	}
	w.secret = secret
	upCA := testnet.NewTestCA(t, "upstream")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	w.authority = net.JoinHostPort("grpc.example.test", strconv.Itoa(port))
	srv := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(upCA.ServerTLS(t, "grpc.example.test"))),
		grpc.ForceServerCodec(rawCodec{}),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			w.calls.Add(1)
			grpc.SetHeader(ctx, metadata.Pairs("x-served-by", "upstream"))
			grpc.SetTrailer(ctx, metadata.Pairs("x-trailer", "from-upstream"))
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			w.calls.Add(1)
			return h(srv, ss)
		}),
		grpc.UnknownServiceHandler(w.echo),
	)
	w.health = health.NewServer()
	healthpb.RegisterHealthServer(srv, w.health)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)

	dir := t.TempDir()
	engine := acmePolicy(t, dir, w.token, fmt.Sprintf(grpcPolicy, port))
	w.cas = &ca.Store{Dir: filepath.Join(dir, "ca")}
	roots := x509.NewCertPool()
	roots.AddCert(upCA.Cert)
	w.gw = &gateway.Gateway{
		Policy:  engine,
		Leaf:    func(tenant, host string) (*tls.Certificate, error) { return mustAuthority(t, w.cas, tenant).Leaf(host) },
		Dialer:  &guard.Dialer{Hosts: engine.UpstreamHosts(), Deny: withoutLoopback(guard.DefaultDeny()), Self: func() []netip.Addr { return nil }},
		RootCAs: roots,
		Events:  w.sink,
		Scanner: &scanner.Scanner{Key: []byte("0123456789abcdef0123456789abcdef")},
	}
	w.proxyAddr = serveOnLoopback(t, w.gw)
	w.upRoots = roots
	return w
}

// echo answers every message of any unknown method with the same bytes.
func (w *grpcWorld) echo(_ any, ss grpc.ServerStream) error {
	for {
		var m []byte
		if err := ss.RecvMsg(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		w.mu.Lock()
		w.received = append(w.received, m)
		w.mu.Unlock()
		if err := ss.SendMsg(&m); err != nil {
			return err
		}
	}
}

// client is a gRPC client that reaches the server only through the proxy,
// as acme, trusting only acme's CA.
func (w *grpcWorld) client() *grpc.ClientConn {
	w.t.Helper()
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		return dialThroughProxy(ctx, (&net.Dialer{}).DialContext, w.proxyAddr, addr, "acme", w.token)
	}
	roots := x509.NewCertPool()
	roots.AddCert(mustAuthority(w.t, w.cas, "acme").Certificate())
	cc, err := grpc.NewClient("passthrough:///"+w.authority, grpc.WithContextDialer(dial),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots})))
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { cc.Close() })
	return cc
}

// dialThroughProxy opens a CONNECT tunnel to addr through the proxy at proxy.
func dialThroughProxy(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), proxy, addr, user, token string) (net.Conn, error) {
	c, err := dial(ctx, "tcp", proxy)
	if err != nil {
		return nil, err
	}
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + token))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", addr, addr, auth)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != 200 {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %s (%s)", addr, resp.Status, resp.Header.Get("Sluice-Reason"))
	}
	return c, nil
}

// rawCodec marshals *[]byte as itself (the echo service) and anything else
// as protobuf (the health service).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.(*[]byte); ok {
		return *b, nil
	}
	return proto.Marshal(v.(proto.Message))
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	if b, ok := v.(*[]byte); ok {
		*b = append([]byte(nil), data...)
		return nil
	}
	return proto.Unmarshal(data, v.(proto.Message))
}

func (rawCodec) Name() string { return "raw" }

func TestGRPCThroughGateway(t *testing.T) {
	w := newGRPCWorld(t)
	hc := healthpb.NewHealthClient(w.client())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("unary, metadata in headers and trailers", func(t *testing.T) {
		var hdr, trl metadata.MD
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&hdr), grpc.Trailer(&trl))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("status %v", resp.Status)
		}
		if got := hdr.Get("x-served-by"); len(got) != 1 || got[0] != "upstream" {
			t.Errorf("header metadata %v", hdr)
		}
		if got := trl.Get("x-trailer"); len(got) != 1 || got[0] != "from-upstream" {
			t.Errorf("trailer metadata %v: response trailers must pass through", trl)
		}
	})
	t.Run("status code in trailers", func(t *testing.T) {
		_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "unknown"})
		if status.Code(err) != codes.NotFound {
			t.Fatalf("unknown service: %v, want NotFound", err)
		}
	})
	t.Run("server streaming", func(t *testing.T) {
		w.health.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
		stream, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
		if err != nil {
			t.Fatal(err)
		}
		first, err := stream.Recv()
		if err != nil || first.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("first update: %v %v", first, err)
		}
		w.health.SetServingStatus("svc", healthpb.HealthCheckResponse_NOT_SERVING)
		second, err := stream.Recv()
		if err != nil || second.Status != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("second update: %v %v", second, err)
		}
	})
	t.Run("method the policy does not allow", func(t *testing.T) {
		before := w.calls.Load()
		_, err := hc.List(ctx, &healthpb.HealthListRequest{})
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("List: %v, want PermissionDenied", err)
		}
		if !w.sink.has("path-not-allowed") {
			t.Errorf("events %v", w.sink.reasons())
		}
		if w.calls.Load() != before {
			t.Fatal("the refused method reached the server")
		}
	})
	for _, compress := range []bool{false, true} {
		t.Run("secret in a request message, gzip "+strconv.FormatBool(compress), func(t *testing.T) {
			before, events := w.calls.Load(), len(w.sink.reasons())
			var opts []grpc.CallOption
			if compress {
				opts = append(opts, grpc.UseCompressor("gzip"))
			}
			_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "svc-" + w.secret}, opts...)
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("Check with a secret: %v, want PermissionDenied", err)
			}
			got := w.sink.reasons()[events:]
			if len(got) != 1 || got[0] != "secret-detected" {
				t.Fatalf("events %v, want one secret-detected", got)
			}
			if w.calls.Load() != before {
				t.Fatal("the message with the secret reached the server")
			}
		})
	}
}

// A bidirectional stream is scanned message by message: the first message
// goes through and is answered; the one with a secret ends the call with
// PERMISSION_DENIED and never reaches the server.
func TestGRPCStreamScannedPerMessage(t *testing.T) {
	w := newGRPCWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := w.client().NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
		"/sluice.test.Echo/Chat", grpc.ForceCodec(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	hello := []byte("hello")
	if err := stream.SendMsg(&hello); err != nil {
		t.Fatal(err)
	}
	var got []byte
	if err := stream.RecvMsg(&got); err != nil || string(got) != "hello" {
		t.Fatalf("echo of the first message: %q %v", got, err)
	}
	leak := []byte(`{"token":"` + w.secret + `"}`)
	stream.SendMsg(&leak)
	err = stream.RecvMsg(&got)
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("after a message with a secret: %v, want PermissionDenied", err)
	}
	if !w.sink.has("secret-detected") {
		t.Errorf("events %v", w.sink.reasons())
	}
	time.Sleep(100 * time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.received) != 1 || string(w.received[0]) != "hello" {
		t.Fatalf("server received %q, want only the first message", w.received)
	}
}

// BenchmarkGRPCUnary is a unary health Check on a kept connection, direct to
// the server and through the scanning gateway.
func BenchmarkGRPCUnary(b *testing.B) {
	w := newGRPCWorld(b)
	direct, err := grpc.NewClient("passthrough:///"+w.authority,
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
		}),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: w.upRoots})))
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	for _, via := range []struct {
		name string
		cc   *grpc.ClientConn
	}{{"direct", direct}, {"gateway", w.client()}} {
		b.Run(via.name, func(b *testing.B) {
			hc := healthpb.NewHealthClient(via.cc)
			req := &healthpb.HealthCheckRequest{}
			if _, err := hc.Check(context.Background(), req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := hc.Check(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestGRPCUnrecordableAlertStops: a gRPC message whose finding only alerts
// still does not go on when the store cannot record the alert (an alert
// nobody can see is no alert), as on HTTP and WebSocket.
func TestGRPCUnrecordableAlertStops(t *testing.T) {
	w := newGRPCWorld(t)
	w.gw.Events = &stalledSink{}
	w.gw.Scanner = failingScanner{ScanFn: func(_ context.Context, req *scanner.Request) (*scanner.Result, error) {
		if req.Body == nil {
			return &scanner.Result{Verdict: scanner.Pass, Path: req.URL.Path}, nil
		}
		b, _ := io.ReadAll(req.Body)
		if !bytes.Contains(b, []byte("alert-me")) {
			return &scanner.Result{Verdict: scanner.Pass}, nil
		}
		f := scanner.Finding{Kind: "secret", Rule: "test-rule", Where: "body", Snippet: "x…", Action: scanner.Alert}
		return &scanner.Result{Findings: []scanner.Finding{f}, Verdict: scanner.Alert}, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := w.client().NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
		"/sluice.test.Echo/Chat", grpc.ForceCodec(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	hello := []byte("hello")
	if err := stream.SendMsg(&hello); err != nil {
		t.Fatal(err)
	}
	var got []byte
	if err := stream.RecvMsg(&got); err != nil || string(got) != "hello" {
		t.Fatalf("echo of the first message: %q %v", got, err)
	}
	alert := []byte("alert-me")
	stream.SendMsg(&alert)
	if err := stream.RecvMsg(&got); err == nil {
		t.Fatalf("the unrecorded alert's message was echoed: %q", got)
	}
	time.Sleep(100 * time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.received) != 1 {
		t.Fatalf("server received %q, want only the first message", w.received)
	}
}
