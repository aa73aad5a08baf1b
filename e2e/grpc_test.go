package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/encoding/gzip" // the client compresses with gzip in one call
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/sluice-egress/sluice/internal/testnet"
	"github.com/sluice-egress/sluice/scanner"
)

// grpcPolicy allows two methods of the health service on grpc.example.test.
const grpcPolicy = `
version: 1
listen:
  proxy: 192.0.2.1:3128
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
  hosts:
    grpc.example.test: 198.51.100.10
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: grpc.example.test
            methods: [POST]
            paths: ["/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"]
`

// A real gRPC client in the sandbox calls a real gRPC server in the
// internet through `sluice serve`, trusting only the tenant CA: unary and
// streaming calls work, a method the policy does not allow and a message
// carrying a secret are refused on their streams.
func TestGRPC(t *testing.T) {
	f := newFixture(t, grpcPolicy, "acme")
	f.w.AddUpstreamAddr(t, apiAddr)
	ln, err := f.w.Internet.Listen("tcp", testnet.HostPort(apiAddr, 443))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(f.upCA.ServerTLS(t, "grpc.example.test"))))
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	f.serve(t, "2s")
	roots := trustRoots(t, f.exportTrust(t, "acme"))

	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := f.w.Sandbox.DialContext(ctx, "tcp", proxyAddr)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", addr, addr, basicAuth("acme", f.token))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			c.Close()
			return nil, fmt.Errorf("CONNECT %s: %v %v", addr, resp, err)
		}
		return c, nil
	}
	cc, err := grpc.NewClient("passthrough:///grpc.example.test:443", grpc.WithContextDialer(dial),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots})))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("unary Check through sluice: %v %v", resp, err)
	}
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "unknown"}); status.Code(err) != codes.NotFound {
		t.Fatalf("Check of an unknown service: %v, want NotFound from the server's trailers", err)
	}
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	watch, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := watch.Recv(); err != nil || u.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first Watch update: %v %v", u, err)
	}
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_NOT_SERVING)
	if u, err := watch.Recv(); err != nil || u.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("second Watch update: %v %v", u, err)
	}

	if _, err := hc.List(ctx, &healthpb.HealthListRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("List (not allowed): %v, want PermissionDenied", err)
	}
	secret, err := scanner.FakeSecret("github-pat")
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]grpc.CallOption{nil, {grpc.UseCompressor("gzip")}} {
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: secret}, opts...); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("Check carrying a secret (%d options): %v, want PermissionDenied", len(opts), err)
		}
	}
	// The allowed calls still work on the same connection.
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("Check after the refusals: %v", err)
	}
	// The log is read from the gateway's stderr as it comes: wait for the
	// lines, then look at all of it for the secret.
	for _, want := range []string{"reason=path-not-allowed", "rule=github-pat"} {
		if !f.logged(want) {
			t.Errorf("gateway log lacks %q", want)
		}
	}
	if strings.Contains(f.log(), secret) {
		t.Error("the secret is in the gateway's log")
	}
}
