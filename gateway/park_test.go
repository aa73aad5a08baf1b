package gateway_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/gateway"
)

// h1Tunnel opens an inspected HTTP/1.1 tunnel to api.example.test as acme.
func h1Tunnel(t *testing.T, w *world) (*tls.Conn, *bufio.Reader, string) {
	t.Helper()
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	raw, resp := w.connect("acme", w.tokens["acme"], authority)
	if raw == nil {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	c := tls.Client(raw, &tls.Config{ServerName: "api.example.test", RootCAs: w.tenantRoots("acme"), NextProtos: []string{"http/1.1"}})
	t.Cleanup(func() { c.Close() })
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c), authority
}

// readOK reads one answer and fails unless it is 200 with want as its body.
func readOK(t *testing.T, br *bufio.Reader, want string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("answer %s %q, want 200 %q", resp.Status, body, want)
	}
}

// An idle HTTP/1.1 tunnel is parked, and the client's connection goes on as
// one kept-alive connection: the next request, a request whose first byte
// comes alone, one whose first bytes came with the one before, pipelined
// requests, all answered in order.
func TestIdleTunnelParks(t *testing.T) {
	defer gateway.SetParkAfter(50 * time.Millisecond)()
	w := newWorld(t)
	c, br, authority := h1Tunnel(t, w)
	get := func(path string) string {
		return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, authority)
	}
	parked := func() { waitFor(t, func() bool { return w.gw.ParkedTunnels() == 1 }) }

	io.WriteString(c, get("/v1/a"))
	readOK(t, br, "hello GET /v1/a 0")
	parked()
	io.WriteString(c, get("/v1/b"))
	readOK(t, br, "hello GET /v1/b 0")
	parked()

	// The first byte alone, the rest after the gateway has read it.
	req := get("/v1/c")
	io.WriteString(c, req[:1])
	waitFor(t, func() bool { return w.gw.ParkedTunnels() == 0 })
	time.Sleep(100 * time.Millisecond)
	io.WriteString(c, req[1:])
	readOK(t, br, "hello GET /v1/c 0")
	parked()

	// A request with the first bytes of the next one: net/http holds them
	// while it waits for the rest, so the connection must not park (and drop
	// them) however long the rest takes.
	next := get("/v1/h")
	io.WriteString(c, get("/v1/g")+next[:2])
	readOK(t, br, "hello GET /v1/g 0")
	time.Sleep(300 * time.Millisecond) // six times parkAfter
	if n := w.gw.ParkedTunnels(); n != 0 {
		t.Fatalf("%d tunnels parked while net/http held part of a request", n)
	}
	io.WriteString(c, next[2:])
	readOK(t, br, "hello GET /v1/h 0")
	parked()

	io.WriteString(c, get("/v1/d")+get("/v1/e")+get("/v1/f"))
	for _, p := range []string{"/v1/d", "/v1/e", "/v1/f"} {
		readOK(t, br, "hello GET "+p+" 0")
	}
	parked()

	c.Close()
	waitFor(t, func() bool { return w.gw.ParkedTunnels() == 0 && w.gw.OpenTunnels() == 0 })
}

// A parked tunnel still ends at the keep-alive idle timeout, and at Shutdown.
func TestParkedTunnelEnds(t *testing.T) {
	defer gateway.SetParkAfter(50 * time.Millisecond)()
	w := newWorldWith(t, func(g *gateway.Gateway) { g.IdleTimeout = 400 * time.Millisecond })
	c, br, authority := h1Tunnel(t, w)
	fmt.Fprintf(c, "GET /v1/a HTTP/1.1\r\nHost: %s\r\n\r\n", authority)
	readOK(t, br, "hello GET /v1/a 0")
	waitFor(t, func() bool { return w.gw.ParkedTunnels() == 1 })
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("read on the idle tunnel: %v, want the gateway to close it", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the parked tunnel was closed after %v, want about the 400ms idle timeout", d)
	}
	waitFor(t, func() bool { return w.gw.ParkedTunnels() == 0 && w.gw.OpenTunnels() == 0 })

	w = newWorld(t)
	c, br, authority = h1Tunnel(t, w)
	fmt.Fprintf(c, "GET /v1/a HTTP/1.1\r\nHost: %s\r\n\r\n", authority)
	readOK(t, br, "hello GET /v1/a 0")
	waitFor(t, func() bool { return w.gw.ParkedTunnels() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.gw.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a parked tunnel: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("read on the parked tunnel after Shutdown: %v, want it closed", err)
	}
	if n := w.gw.OpenTunnels(); n != 0 {
		t.Errorf("%d tunnels open after Shutdown", n)
	}
}
