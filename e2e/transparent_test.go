package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/dns/dnsmessage"
)

// TestTransparentDNS: one gateway, a sandbox whose only resolver is Sluice and whose TCP
// 80/443 is redirected to the gateway, identified by the address its run registered;
// explicit clients in the same sandbox use the proxy. A real authoritative DNS server in
// the internet logs every query the gateway makes.
func TestTransparentDNS(t *testing.T) {
	e := startTransparentEnv(t)
	ctx := context.Background()

	// The run registers the sandbox's address (POST /api/runs sandbox_addr).
	var run struct {
		ID string `json:"id"`
	}
	if code := e.apiJSON(t, http.MethodPost, "/api/runs", map[string]any{"tenant": "acme", "sandbox_addr": "192.0.2.2"}, &run); code != 201 {
		t.Fatalf("create run: %d", code)
	}
	e.runID = run.ID
	if code := e.apiJSON(t, http.MethodPost, "/api/runs", map[string]any{"tenant": "acme", "sandbox_addr": "192.0.2.2"}, nil); code != 400 {
		t.Fatalf("a second run on the same address: %d, want 400", code)
	}

	t.Run("the resolver answers allowed names with the gateway", func(t *testing.T) {
		for _, name := range []string{"www.example.test", "plain.example.test", "sluice.internal"} {
			r := e.query(t, gatewayDNS, name)
			if r == nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
				t.Errorf("%s: %v", name, r)
			}
		}
		if n := e.dns.count("www.example.test", dnsmessage.TypeA); n != 0 {
			t.Errorf("the sandbox's lookups reached the internet's DNS server %d times", n)
		}
	})

	t.Run("allowed names work in both modes", func(t *testing.T) {
		// Transparent: curl and Go without proxy settings.
		env := e.trustEnv(t)
		if code, _, _, body := e.sandboxCurl(t, env, "https://www.example.test/t"); code != "200" || body != "hello from www.example.test" {
			t.Errorf("transparent curl https: %s %q", code, body)
		}
		if code, _, _, body := e.sandboxCurl(t, env, "http://plain.example.test/t"); code != "200" || body != "hello from plain.example.test" {
			t.Errorf("transparent curl http: %s %q", code, body)
		}
		resp, err := e.directClient(t).Get("https://www.example.test/go")
		if err != nil {
			t.Fatalf("transparent Go client: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "hello from www.example.test" {
			t.Errorf("transparent Go client: %d %q", resp.StatusCode, b)
		}
		// Explicit: the proxy, with the tenant's token, from the same sandbox.
		resp, err = e.sandboxClient(t, "acme", e.token, e.roots).Get("https://www.example.test/explicit")
		if err != nil {
			t.Fatalf("explicit client: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("explicit client: %d", resp.StatusCode)
		}
		if code, _, _, _ := e.sandboxCurl(t, envLines(t, e.trust), "https://www.example.test/explicit-curl"); code != "200" {
			t.Errorf("explicit curl: %s", code)
		}
		if e.dns.count("www.example.test", dnsmessage.TypeA) == 0 {
			t.Error("the gateway never resolved the allowed name: were the requests served at all?")
		}
	})

	t.Run("a denied or data-bearing name produces no query outside", func(t *testing.T) {
		const dataName = "4a6f686e20446f65206b6e6f77732e2e2e.www.example.test"
		for _, name := range []string{"evil.example.test", dataName} {
			if r := e.query(t, gatewayDNS, name); r == nil || r.Rcode != dns.RcodeRefused || len(r.Answer) != 0 {
				t.Errorf("%s: %v, want REFUSED", name, r)
			}
			// Transparent: the lookup fails, so nothing connects.
			if code, _, _, _ := e.sandboxCurl(t, e.trustEnv(t), "--max-time", "5", "https://"+name+"/"); code != "000" {
				t.Errorf("transparent curl %s: %s", name, code)
			}
			// Explicit: refused on the CONNECT, before any lookup.
			if code, reason, _ := e.connect443(t, e.token, name); code != 403 {
				t.Errorf("CONNECT %s: %d %s", name, code, reason)
			}
			for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
				if n := e.dns.count(name, typ); n != 0 {
					t.Errorf("%s reached the internet's DNS server %d times", name, n)
				}
			}
		}
	})

	t.Run("a raw connection to an outside address lands at the gateway and is refused", func(t *testing.T) {
		c := e.sandboxDial(t, "203.0.113.99:443")
		tc := tls.Client(c, &tls.Config{ServerName: "evil.example.test", RootCAs: e.roots})
		if err := tc.Handshake(); err != nil {
			t.Fatalf("the refusal's handshake (signed by the tenant CA): %v", err)
		}
		if code, reason := getOn(t, tc, "evil.example.test"); code != 403 || reason != "host-not-allowed" {
			t.Errorf("TLS: %d %q", code, reason)
		}
		if code, reason := getOn(t, e.sandboxDial(t, "203.0.113.99:80"), "evil.example.test"); code != 403 || reason != "host-not-allowed" {
			t.Errorf("HTTP: %d %q", code, reason)
		}
	})

	t.Run("SNI different from Host, and no SNI, are refused", func(t *testing.T) {
		before := len(e.www.Seen())
		tc := tls.Client(e.sandboxDial(t, "198.51.100.40:443"), &tls.Config{ServerName: "www.example.test", RootCAs: e.roots})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		if code, reason := getOn(t, tc, "other.example.test"); code != 403 || reason != "domain-fronting" {
			t.Errorf("SNI www, Host other: %d %q", code, reason)
		}
		// The test client skips verification only to send a ClientHello without a name.
		nosni := tls.Client(e.sandboxDial(t, "198.51.100.40:443"), &tls.Config{InsecureSkipVerify: true})
		if err := nosni.Handshake(); err == nil {
			t.Error("a handshake without SNI completed")
		}
		if n := len(e.www.Seen()) - before; n != 0 {
			t.Errorf("the upstream served %d requests", n)
		}
		if !e.logged("reason=sni-missing") {
			t.Error("the missing SNI is not in the gateway's log")
		}
	})

	t.Run("UDP, QUIC and other ports go nowhere", func(t *testing.T) {
		udp0, tcp0 := e.counter(t, "dropped_udp"), e.counter(t, "dropped_tcp")
		// QUIC's first flight and a DNS query straight to the internet's server.
		if c, err := e.w.Sandbox.DialContext(context.Background(), "udp", "198.51.100.41:443"); err == nil {
			c.Write(bytes.Repeat([]byte{0xc0}, 1200))
			c.Close()
		}
		if r := e.query(t, "198.51.100.53:53", "leak.example.test"); r != nil {
			t.Errorf("the internet's DNS server answered the sandbox: %v", r)
		}
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if c, err := e.w.Sandbox.DialContext(dctx, "tcp", "198.51.100.41:8080"); err == nil {
			c.Close()
			t.Error("a TCP connection to port 8080 got out")
		}
		cancel()
		time.Sleep(200 * time.Millisecond)
		if n := e.udpSeen.Load(); n != 0 {
			t.Errorf("%d datagrams reached UDP 443 outside", n)
		}
		if n := e.dns.count("leak.example.test", dnsmessage.TypeA); n != 0 {
			t.Errorf("the sandbox's own query reached the DNS server %d times", n)
		}
		if n := e.tcpOther.accepted.Load(); n != 0 {
			t.Errorf("%d connections reached TCP 8080 outside", n)
		}
		if udp, tcp := e.counter(t, "dropped_udp"), e.counter(t, "dropped_tcp"); udp < udp0+2 || tcp <= tcp0 {
			t.Errorf("the redirect rules counted udp %d→%d, tcp %d→%d drops", udp0, udp, tcp0, tcp)
		}
	})

	t.Run("sluice doctor proves it in both modes", func(t *testing.T) {
		common := []string{"doctor", "--control", "https://www.example.test/", "--outside", "198.51.100.41", "--timeout", "3s"}
		transparent := e.doctor(t, []string{"SSL_CERT_FILE=" + filepath.Join(e.trust, "bundle.pem")},
			append(common, "--transparent", "--ca", filepath.Join(e.trust, "ca.pem"))...)
		explicit := e.doctor(t, envLines(t, e.trust), common...)
		for mode, out := range map[string]string{"transparent": transparent.out, "explicit": explicit.out} {
			for _, want := range []string{"PASS  allowed www.example.test", "PASS  resolver is Sluice 192.0.2.1:53",
				"PASS  no answer for a denied name 192.0.2.1:53", "PASS  no direct route 198.51.100.41:443",
				"PASS  no direct route 198.51.100.41:80", "PASS  no DNS to 198.51.100.41:53/udp", "PASS  no QUIC to 198.51.100.41:443/udp"} {
				if !strings.Contains(out, want) {
					t.Errorf("%s: no %q in\n%s", mode, want, out)
				}
			}
		}
		if transparent.code != 0 || explicit.code != 0 {
			t.Fatalf("doctor exit: transparent %d, explicit %d\n%s\n%s", transparent.code, explicit.code, transparent.out, explicit.out)
		}
		t.Logf("doctor in the transparent sandbox:\n%s", transparent.out)
		if !strings.Contains(transparent.out, "redirected to the gateway and refused there: 403") {
			t.Errorf("transparent: the outside probes did not land at the gateway\n%s", transparent.out)
		}
		// A sandbox with a resolver that answers what Sluice refuses is not proven.
		open := startOpenResolverIn(t, e)
		leaky := e.doctor(t, envLines(t, e.trust), append(common, "--resolver", open)...)
		if leaky.code == 0 || !strings.Contains(leaky.out, "FAIL  resolver is Sluice") {
			t.Errorf("doctor with an open resolver: exit %d\n%s", leaky.code, leaky.out)
		}
	})

	t.Run("an ended run's sandbox is nobody's", func(t *testing.T) {
		if code := e.apiJSON(t, http.MethodDelete, "/api/runs/"+e.runID, nil, nil); code != 200 {
			t.Fatalf("end run: %d", code)
		}
		if r := e.query(t, gatewayDNS, "www.example.test"); r == nil || r.Rcode != dns.RcodeRefused {
			t.Errorf("after the run: %v, want REFUSED", r)
		}
		tc := tls.Client(e.sandboxDial(t, "198.51.100.40:443"), &tls.Config{ServerName: "www.example.test", RootCAs: e.roots})
		if err := tc.Handshake(); err == nil {
			t.Error("a redirected connection of an ended run was served")
		}
	})
}

// trustEnv is sluice.env without the proxy: what a transparent sandbox sets.
func (e *transparentEnv) trustEnv(t *testing.T) []string {
	var out []string
	for _, l := range envLines(t, e.trust) {
		if k, _, _ := strings.Cut(l, "="); !strings.HasSuffix(strings.ToLower(k), "_proxy") {
			out = append(out, l)
		}
	}
	return out
}

func (e *transparentEnv) sandboxDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := e.w.Sandbox.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from the sandbox: %v", addr, err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// getOn sends one GET with Host host on c and returns the status and Sluice-Reason.
func getOn(t *testing.T, c net.Conn, host string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Sluice-Reason")
}

// apiJSON calls the admin API as the tenant.
func (e *transparentEnv) apiJSON(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://127.0.0.1:8080"+path, rd)
	req.Header.Set("Authorization", "Bearer acme:"+e.token)
	resp, err := e.admin.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

type doctorRun struct {
	out  string
	code int
}

// doctor runs `sluice doctor` in the sandbox with env.
func (e *transparentEnv) doctor(t *testing.T, env []string, args ...string) doctorRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.w.Sandbox.Command(ctx, sluiceBin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(interface{ ExitCode() int }); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return doctorRun{out: string(out), code: code}
}

// startOpenResolverIn serves, in the sandbox itself, a resolver that answers every name:
// a resolver the sandbox can reach that is not Sluice.
func startOpenResolverIn(t *testing.T, e *transparentEnv) string {
	t.Helper()
	var pc net.PacketConn
	if err := e.w.Sandbox.Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if rr, err := dns.NewRR(r.Question[0].Name + " 60 IN A 192.0.2.1"); err == nil {
			m.Answer = append(m.Answer, rr)
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String()
}
