package testnet

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// upstreamIP6 is the IPv6 counterpart of upstreamIP, in the documentation range.
var upstreamIP6 = netip.MustParseAddr("2001:db8:2::10")

func TestWorldIPv6(t *testing.T) {
	w := New(t)
	ca := NewTestCA(t, "upstream6")
	up := w.ServeUpstream(t, HostPort(upstreamIP6, 443), ca.ServerTLS(t, upstreamIP6.String()), nil)
	if up.URL != "https://[2001:db8:2::10]" {
		t.Errorf("URL = %q, want https://[2001:db8:2::10]", up.URL)
	}

	t.Run("gateway reaches the IPv6 upstream over h2", func(t *testing.T) {
		c := w.Gateway.HTTPClient(nil, ca.Pool())
		resp, err := c.Get(up.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Errorf("proto = %s, want HTTP/2", resp.Proto)
		}
		mustReach(t, c, up.URL, "[2001:db8:2::10]")
	})

	t.Run("sandbox reaches a listener on the gateway's IPv6 address", func(t *testing.T) {
		ln, err := w.Gateway.Listen("tcp", HostPort(w.GatewaySandboxAddr6, 0))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			if c, err := ln.Accept(); err == nil {
				io.WriteString(c, "gw6")
				c.Close()
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := w.Sandbox.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if local := c.LocalAddr().(*net.TCPAddr).AddrPort().Addr(); local != w.SandboxAddr6 {
			t.Errorf("local = %s, want %s", local, w.SandboxAddr6)
		}
		if b, _ := io.ReadAll(c); string(b) != "gw6" {
			t.Errorf("read %q", b)
		}
	})

	// Direct attempts time out (the gateway drops silently), so they run in parallel.
	t.Run("sandbox has no direct IPv6 way out", func(t *testing.T) {
		for _, addr := range []string{up.Addr, HostPort(w.InternetAddr6, 443), HostPort(w.GatewayInternetAddr6, 443)} {
			t.Run(addr, func(t *testing.T) {
				t.Parallel()
				mustNotDial(t, w.Sandbox, addr)
			})
		}
	})

	t.Run("ipv6 forwarding is off", func(t *testing.T) {
		out, err := w.Gateway.Run(t, "cat", "/proc/sys/net/ipv6/conf/all/forwarding")
		if err != nil || strings.TrimSpace(out) != "0" {
			t.Errorf("ipv6 forwarding = %q, %v; want 0", out, err)
		}
	})
}

func TestUpstreamAddrsIPv6(t *testing.T) {
	w := New(t)
	for _, tc := range []struct {
		name, addr, url string
	}{
		{"documentation range, on-link", "2001:db8:2::11", "http://[2001:db8:2::11]"},
		{"documentation range, routed", "2001:db8:3::10", "http://[2001:db8:3::10]"},
		{"unique local", "fd12:3456::10", "http://[fd12:3456::10]"},
		{"AWS IPv6 metadata", "fd00:ec2::254", "http://[fd00:ec2::254]"},
		{"NAT64 of loopback", "64:ff9b::7f00:1", "http://[64:ff9b::7f00:1]"},
		{"IPv4-mapped is added as IPv4", "::ffff:203.0.113.20", "http://203.0.113.20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // the negative dial waits out its 2s timeout
			a := netip.MustParseAddr(tc.addr)
			w.AddUpstreamAddr(t, a)
			w.AddUpstreamAddr(t, a) // idempotent
			up := w.ServeUpstream(t, HostPort(a.Unmap(), 80), nil, nil)
			if up.URL != tc.url {
				t.Errorf("URL = %q, want %q", up.URL, tc.url)
			}
			mustReach(t, w.Gateway.HTTPClient(nil, nil), up.URL, strings.TrimPrefix(tc.url, "http://"))
			mustNotDial(t, w.Sandbox, up.Addr)
		})
	}
}

func TestUpstreamAddrRefused(t *testing.T) {
	w := New(t)
	for _, s := range []string{"::1", "::", "fe80::1", "ff02::1", "127.0.0.1", "::ffff:127.0.0.1", "fe80::1%lo"} {
		t.Run(s, func(t *testing.T) {
			if err := w.addUpstreamAddr(netip.MustParseAddr(s)); err == nil {
				t.Errorf("addUpstreamAddr(%s) succeeded; it cannot be an upstream address", s)
			}
		})
	}
}

// TestForwardDropIsEnforcedIPv6 is TestForwardDropIsEnforced over IPv6: the nftables inet
// chain alone keeps the sandbox in, and the negative check can fail.
func TestForwardDropIsEnforcedIPv6(t *testing.T) {
	w := New(t)
	up := w.ServeUpstream(t, HostPort(upstreamIP6, 80), nil, nil)
	if _, err := w.Gateway.Run(t, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding"); err != nil {
		t.Fatal(err)
	}
	mustNotDial(t, w.Sandbox, up.Addr)

	if _, err := w.Gateway.Run(t, "nft", "delete", "table", "inet", "sluice_testnet"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := w.Sandbox.DialContext(ctx, "tcp", up.Addr)
	if err != nil {
		t.Fatalf("with IPv6 forwarding on and no drop chain the sandbox should get through: %v", err)
	}
	c.Close()
}
