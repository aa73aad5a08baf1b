package gateway_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/gateway"
)

// classical is the key exchanges config's tls.sandbox_key_exchange: classical
// hands the gateway.
var classical = []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521}

// newConnClient makes every request on a new connection to the gateway, as
// a client without keep-alive does; curves nil: Go's default offer (the
// hybrid X25519MLKEM768 share and an X25519 one).
func (w *world) newConnClient(curves []tls.CurveID, resume bool) *http.Client {
	proxy := &url.URL{Scheme: "http", User: url.UserPassword("acme", w.tokens["acme"]), Host: w.proxyAddr}
	cfg := &tls.Config{RootCAs: w.tenantRoots("acme"), CurvePreferences: curves}
	if resume {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	}
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: cfg, DisableKeepAlives: true},
		Timeout:   10 * time.Second,
	}
}

// TestSandboxKeyExchange: SandboxCurves decides the key exchange of the
// sandbox's TLS and of nothing else. Unset, a client that offers the hybrid
// post-quantum X25519MLKEM768 gets it; with the classical list it gets
// X25519, a client that offers only ML-KEM gets no handshake, and the
// upstream hop stays post-quantum either way.
func TestSandboxKeyExchange(t *testing.T) {
	tests := []struct {
		name    string
		gateway []tls.CurveID // SandboxCurves
		client  []tls.CurveID
		want    tls.CurveID // 0: no handshake
	}{
		{"default, Go's client", nil, nil, tls.X25519MLKEM768},
		{"default, classical client", nil, []tls.CurveID{tls.X25519}, tls.X25519},
		{"classical, Go's client", classical, nil, tls.X25519},
		{"classical, P-256 client", classical, []tls.CurveID{tls.CurveP256}, tls.CurveP256},
		{"classical, ML-KEM only client", classical, []tls.CurveID{tls.X25519MLKEM768}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, func(g *gateway.Gateway) { g.SandboxCurves = tc.gateway })
			resp, err := w.newConnClient(tc.client, false).Get(w.url("api.example.test", "/v1/x"))
			if tc.want == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("handshake with key exchanges %v succeeded against %v", tc.client, tc.gateway)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s", resp.Status)
			}
			if got := resp.TLS.CurveID; got != tc.want {
				t.Errorf("sandbox hop: key exchange %v, want %v", got, tc.want)
			}
			reqs := w.up.requests()
			if len(reqs) != 1 || reqs[0].TLS == nil {
				t.Fatalf("upstream saw %d requests", len(reqs))
			}
			if got := reqs[0].TLS.CurveID; got != tls.X25519MLKEM768 {
				t.Errorf("upstream hop: key exchange %v, want %v whatever SandboxCurves says", got, tls.X25519MLKEM768)
			}
		})
	}
}

// BenchmarkNewConn opens a new inspected TLS connection through a real gateway on
// loopback for every GET (the leaf cached, the upstream connection pooled), as
// make bench's newconn-warm and newconn-resumed do, with the sandbox's key exchange
// post-quantum (the default) and classical. cpu-ns/op is the whole process's CPU
// time, client and upstream included: compare it between variants.
//
//	go test -run '^$' -bench NewConn -count 6 ./gateway > b.txt && benchstat -col /kex b.txt
func BenchmarkNewConn(b *testing.B) {
	for _, kex := range []struct {
		name   string
		curves []tls.CurveID
	}{{"post-quantum", nil}, {"classical", classical}} {
		w := newWorldWith(b, func(g *gateway.Gateway) { g.SandboxCurves = kex.curves })
		for _, resume := range []bool{false, true} {
			name := "conn=new/kex=" + kex.name
			if resume {
				name = "conn=resumed/kex=" + kex.name
			}
			b.Run(name, func(b *testing.B) {
				c := w.newConnClient(nil, resume)
				get := func() {
					resp, err := c.Get(w.url("api.example.test", "/v1/x"))
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Fatalf("status %s", resp.Status)
					}
				}
				get() // a first session to resume, a first upstream connection
				b.ReportAllocs()
				cpu := processCPU(b)
				for b.Loop() {
					get()
				}
				b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestHandshakeTimeout: a client that opens a tunnel and never says hello
// loses it at HandshakeTimeout, recorded as client-tls-failed; one whose
// handshake succeeded keeps its tunnel past that time (the deadline is the
// handshake's alone).
func TestHandshakeTimeout(t *testing.T) {
	// Long enough for a handshake under -race on a loaded machine.
	const timeout = 500 * time.Millisecond
	w := newWorldWith(t, func(g *gateway.Gateway) { g.HandshakeTimeout = timeout })
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))

	silent, _ := w.connect("acme", w.tokens["acme"], authority)
	if silent == nil {
		t.Fatal("CONNECT refused")
	}
	defer silent.Close()
	silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := silent.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
		t.Fatalf("silent client: read %d bytes, err %v; want the gateway to close the tunnel at its handshake timeout", n, err)
	}
	waitFor(t, func() bool { return w.sink.has(gateway.ReasonTLSHandshake) })

	c, _ := w.connect("acme", w.tokens["acme"], authority)
	if c == nil {
		t.Fatal("CONNECT refused")
	}
	tc := tls.Client(c, &tls.Config{RootCAs: w.tenantRoots("acme"), ServerName: "api.example.test", NextProtos: []string{"http/1.1"}})
	defer tc.Close()
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * timeout) // past the handshake's deadline, within every idle timeout
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(tc, "GET /v1/after HTTP/1.1\r\nHost: %s\r\n\r\n", authority)
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatalf("request after the handshake timeout had passed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("request after the handshake timeout had passed: %s", resp.Status)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
