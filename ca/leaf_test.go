package ca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLeafProperties(t *testing.T) {
	s := newStore(t)
	clk := newClock()
	s.Now = clk.Now
	a := MustAuthority(t, s, "acme")
	c := MustLeaf(t, a, "a.example.test")
	l := c.Leaf

	if l == nil {
		t.Fatal("Leaf not set")
	}
	if len(c.Certificate) != 2 || !bytes.Equal(c.Certificate[0], l.Raw) || !bytes.Equal(c.Certificate[1], a.Certificate().Raw) {
		t.Fatal("chain is not [leaf, root]")
	}
	if got := l.DNSNames; len(got) != 1 || got[0] != "a.example.test" {
		t.Errorf("DNSNames = %q, want exactly [a.example.test]", got)
	}
	if len(l.IPAddresses) != 0 || len(l.URIs) != 0 || len(l.EmailAddresses) != 0 {
		t.Error("leaf carries extra SANs")
	}
	if l.IsCA {
		t.Error("leaf IsCA")
	}
	if l.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("KeyUsage = %v, want DigitalSignature", l.KeyUsage)
	}
	if len(l.ExtKeyUsage) != 1 || l.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("ExtKeyUsage = %v, want [ServerAuth]", l.ExtKeyUsage)
	}
	if !bytes.Equal(l.AuthorityKeyId, a.Certificate().SubjectKeyId) {
		t.Error("AuthorityKeyId is not the root's SubjectKeyId")
	}
	key, ok := c.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || key.Curve != elliptic.P256() {
		t.Fatalf("leaf key %T, want ECDSA P-256", c.PrivateKey)
	}
	if !key.PublicKey.Equal(l.PublicKey) {
		t.Error("private key does not match leaf")
	}
	if key.PublicKey.Equal(a.Certificate().PublicKey) {
		t.Error("leaf reuses the root key")
	}
	other := MustLeaf(t, a, "b.example.test")
	if other.PrivateKey.(*ecdsa.PrivateKey).Equal(key) {
		t.Error("two leaves share a key")
	}
	now := clk.Now()
	if want := now.Add(-5 * time.Minute).Truncate(time.Second); !l.NotBefore.Equal(want) {
		t.Errorf("NotBefore = %v, want %v", l.NotBefore, want)
	}
	if want := now.Add(DefaultLeafTTL).Truncate(time.Second); !l.NotAfter.Equal(want) {
		t.Errorf("NotAfter = %v, want %v", l.NotAfter, want)
	}
	if err := l.CheckSignatureFrom(a.Certificate()); err != nil {
		t.Errorf("leaf not signed by root: %v", err)
	}
}

func TestLeafVerify(t *testing.T) {
	s := newStore(t)
	a := MustAuthority(t, s, "acme")
	b := MustAuthority(t, s, "beta")
	poolA, poolB := MustPool(t, a), MustPool(t, b)
	now := time.Now()

	for _, tc := range []struct {
		name   string
		auth   *Authority
		host   string
		roots  *x509.CertPool
		verify string
		ok     bool
	}{
		{"own root", a, "a.example.test", poolA, "a.example.test", true},
		{"other tenant root", a, "a.example.test", poolB, "a.example.test", false},
		{"other tenant leaf vs own root", b, "a.example.test", poolA, "a.example.test", false},
		{"other host", a, "a.example.test", poolA, "b.example.test", false},
		{"subdomain", a, "a.example.test", poolA, "x.a.example.test", false},
		{"parent", a, "a.example.test", poolA, "example.test", false},
		{"IPv4", a, "192.0.2.1", poolA, "192.0.2.1", true},
		{"IPv4 other", a, "192.0.2.1", poolA, "192.0.2.2", false},
		{"IPv4 as DNS name", a, "192.0.2.1", poolA, "a.example.test", false},
		{"IPv6", a, "2001:db8::1", poolA, "2001:db8::1", true},
		{"IPv6 other", a, "2001:db8::1", poolA, "2001:db8::2", false},
		{"IPv6 leaf vs other tenant", a, "2001:db8::1", poolB, "2001:db8::1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaf := MustLeaf(t, tc.auth, tc.host)
			err := verify(leaf, tc.roots, tc.verify, now)
			if tc.ok != (err == nil) {
				t.Errorf("verify(%q) err = %v, want ok=%v", tc.verify, err, tc.ok)
			}
		})
	}

	ipLeaf := MustLeaf(t, a, "192.0.2.1").Leaf
	if len(ipLeaf.DNSNames) != 0 || len(ipLeaf.IPAddresses) != 1 || !ipLeaf.IPAddresses[0].Equal(net.ParseIP("192.0.2.1")) {
		t.Errorf("IP leaf SANs: DNS %q, IP %v", ipLeaf.DNSNames, ipLeaf.IPAddresses)
	}
}

func TestLeafInvalidHost(t *testing.T) {
	a := MustAuthority(t, newStore(t), "acme")
	for _, host := range []string{
		"",
		"*.example.test",
		"A.example.test",
		"a..example.test",
		".example.test",
		"a.example.test.",
		"a example.test",
		"a/b.example.test",
		"a.example.test:443",
		"[::1]",
		"fe80::1%eth0",
		"2001:DB8::1",
		"2001:db8:0::1",
		"bücher.example.test",
		"a\x00.example.test",
		string(make([]byte, 254)),
		fmt.Sprintf("%064d.example.test", 0),
	} {
		t.Run(host, func(t *testing.T) {
			_, err := a.Leaf(host)
			if !errors.Is(err, ErrInvalidHost) {
				t.Errorf("Leaf(%q) err = %v, want ErrInvalidHost", host, err)
			}
		})
	}
}

// TestHandshake runs real TLS over loopback: a server presenting leaves from
// tenant acme, clients trusting only one root each.
func TestHandshake(t *testing.T) {
	s := newStore(t)
	a := MustAuthority(t, s, "acme")
	b := MustAuthority(t, s, "beta")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvCfg := &tls.Config{
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return a.Leaf(hello.ServerName)
		},
	}
	var wg sync.WaitGroup
	defer func() {
		ln.Close()
		wg.Wait()
	}()
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				tc := tls.Server(c, srvCfg)
				_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
				if err := tc.Handshake(); err != nil {
					return
				}
				_, _ = io.Copy(tc, io.LimitReader(tc, 5))
			})
		}
	})

	for _, tc := range []struct {
		name       string
		roots      *Authority
		serverName string
		ok         bool
	}{
		{"trusts acme", a, "a.example.test", true},
		{"trusts beta only", b, "a.example.test", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			cl := tls.Client(conn, &tls.Config{RootCAs: MustPool(t, tc.roots), ServerName: tc.serverName})
			_ = cl.SetDeadline(time.Now().Add(5 * time.Second))
			err = cl.Handshake()
			if !tc.ok {
				var unknown x509.UnknownAuthorityError
				if !errors.As(err, &unknown) {
					t.Fatalf("handshake err = %v, want unknown authority", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if _, err := cl.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 5)
			if _, err := io.ReadFull(cl, buf); err != nil || string(buf) != "hello" {
				t.Fatalf("echo = %q, %v", buf, err)
			}
			if got := cl.ConnectionState().PeerCertificates[0].DNSNames; len(got) != 1 || got[0] != tc.serverName {
				t.Errorf("peer DNSNames = %q", got)
			}
		})
	}

	// A server presenting a fixed leaf for another name is refused by the client.
	t.Run("wrong name", func(t *testing.T) {
		leaf := MustLeaf(t, a, "a.example.test")
		c1, c2 := net.Pipe()
		defer c1.Close()
		defer c2.Close()
		go func() {
			_ = tls.Server(c1, &tls.Config{Certificates: []tls.Certificate{*leaf}}).Handshake()
			c1.Close()
		}()
		err := tls.Client(c2, &tls.Config{RootCAs: MustPool(t, a), ServerName: "b.example.test"}).Handshake()
		var host x509.HostnameError
		if !errors.As(err, &host) {
			t.Fatalf("err = %v, want a hostname error", err)
		}
	})
}

func TestLeafCache(t *testing.T) {
	s := newStore(t)
	type call struct {
		tenant string
		hit    bool
	}
	var mu sync.Mutex
	var calls []call
	s.OnLeaf = func(tenant string, hit bool, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call{tenant, hit})
	}
	a := MustAuthority(t, s, "acme")
	b := MustAuthority(t, s, "beta")

	first := MustLeaf(t, a, "a.example.test")
	second := MustLeaf(t, a, "a.example.test")
	if first != second {
		t.Error("second Leaf call minted again")
	}
	other := MustLeaf(t, b, "a.example.test")
	if other == first {
		t.Fatal("tenants share a cached leaf")
	}
	if err := verify(other, MustPool(t, a), "a.example.test", time.Now()); err == nil {
		t.Fatal("beta's leaf verifies against acme's root")
	}
	want := []call{{"acme", false}, {"acme", true}, {"beta", false}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("OnLeaf calls = %v, want %v", calls, want)
	}
	if got := s.minted.Load(); got != 2 {
		t.Errorf("minted %d, want 2", got)
	}
}

func TestLeafConcurrentMissesMintOnce(t *testing.T) {
	s := newStore(t)
	var misses, hits atomic.Int64
	s.OnLeaf = func(_ string, hit bool, _ time.Duration) {
		if hit {
			hits.Add(1)
		} else {
			misses.Add(1)
		}
	}
	a := MustAuthority(t, s, "acme")
	const n = 50
	got := make([]*tls.Certificate, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := a.Leaf("cold.example.test")
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	close(start)
	wg.Wait()
	if m := s.minted.Load(); m != 1 {
		t.Errorf("minted %d times, want 1", m)
	}
	for i, c := range got {
		if c != got[0] {
			t.Fatalf("call %d got another certificate", i)
		}
	}
	if hits.Load()+misses.Load() != n {
		t.Errorf("OnLeaf called %d times, want %d", hits.Load()+misses.Load(), n)
	}
}

func TestLeafCacheBound(t *testing.T) {
	s := newStore(t)
	s.CacheSize = 3
	a := MustAuthority(t, s, "acme")
	first := MustLeaf(t, a, "h0.example.test")
	for i := 1; i < 5; i++ {
		MustLeaf(t, a, fmt.Sprintf("h%d.example.test", i))
	}
	if n := s.cache.Len(); n != 3 {
		t.Errorf("cache holds %d leaves, want 3", n)
	}
	if MustLeaf(t, a, "h4.example.test"); s.minted.Load() != 5 {
		t.Error("recent leaf was evicted")
	}
	if MustLeaf(t, a, "h0.example.test") == first || s.minted.Load() != 6 {
		t.Error("oldest leaf was not evicted")
	}
}

func TestLeafExpiry(t *testing.T) {
	s := newStore(t)
	clk := newClock()
	s.Now = clk.Now
	s.LeafTTL = 3 * time.Hour // lifetime 3h05m with the backdate: re-mint below ~61m left
	a := MustAuthority(t, s, "acme")
	t0 := clk.Now()
	first := MustLeaf(t, a, "a.example.test")

	clk.Set(t0.Add(time.Hour))
	if MustLeaf(t, a, "a.example.test") != first {
		t.Error("re-minted with two thirds of the lifetime left")
	}
	clk.Set(t0.Add(2*time.Hour + 10*time.Minute))
	renewed := MustLeaf(t, a, "a.example.test")
	if renewed == first {
		t.Fatal("leaf not re-minted with less than a third left")
	}
	if !renewed.Leaf.NotAfter.After(first.Leaf.NotAfter) {
		t.Error("renewed leaf does not last longer")
	}
	clk.Set(t0.Add(-time.Hour)) // clock stepped back before NotBefore
	if MustLeaf(t, a, "a.example.test") == renewed {
		t.Error("served a leaf not yet valid")
	}

	// Near the end of the root, leaves stop at its NotAfter.
	end := a.Certificate().NotAfter
	clk.Set(end.Add(-time.Hour))
	capped := MustLeaf(t, a, "b.example.test")
	if !capped.Leaf.NotAfter.Equal(end) {
		t.Errorf("leaf NotAfter %v, want the root's %v", capped.Leaf.NotAfter, end)
	}
	clk.Set(end.Add(time.Second))
	if _, err := a.Leaf("c.example.test"); !errors.Is(err, ErrExpired) {
		t.Errorf("Leaf after root expiry err = %v, want ErrExpired", err)
	}
}
