package e2e

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// dnsAnswer gives the A records for the n-th A query (from 0) of one name.
type dnsAnswer func(n int) []netip.Addr

// dnsKey is one name and query type, as the server counts them.
type dnsKey struct {
	name string // lower case, without the trailing dot
	typ  dnsmessage.Type
}

// dnsServer is an authoritative DNS server on UDP and TCP port 53 in a test namespace. It
// answers A queries from zone with TTL 0 (AAAA and other types: no records; unknown names:
// NXDOMAIN) and counts the queries per name and type.
type dnsServer struct {
	// Addr is the address it listens on, port 53.
	Addr netip.Addr

	mu      sync.Mutex
	zone    map[string]dnsAnswer
	queries map[dnsKey]int
}

// startDNS serves in ns on addr:53, UDP and TCP, until the end of the test.
func startDNS(t *testing.T, ns *testnet.NS, addr netip.Addr) *dnsServer {
	t.Helper()
	s := &dnsServer{Addr: addr, zone: map[string]dnsAnswer{}, queries: map[dnsKey]int{}}
	hp := testnet.HostPort(addr, 53)
	// testnet.NS has no ListenPacket: make the UDP socket on a thread inside ns.
	var pc net.PacketConn
	if err := ns.Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp", hp)
		return err
	}); err != nil {
		t.Fatalf("dns: listen udp %s in %s: %v", hp, ns.Name, err)
	}
	ln, err := ns.Listen("tcp", hp)
	if err != nil {
		pc.Close()
		t.Fatalf("dns: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.serveUDP(pc) }()
	go func() { defer wg.Done(); s.serveTCP(ln) }()
	t.Cleanup(func() {
		pc.Close()
		ln.Close()
		wg.Wait()
	})
	return s
}

// static makes name answer addrs to every A query.
func (s *dnsServer) static(name string, addrs ...netip.Addr) {
	s.set(name, func(int) []netip.Addr { return addrs })
}

// sequence makes the n-th A query for name answer seq[n], and every query after the last
// one answer seq's last element.
func (s *dnsServer) sequence(name string, seq ...[]netip.Addr) {
	s.set(name, func(n int) []netip.Addr { return seq[min(n, len(seq)-1)] })
}

func (s *dnsServer) set(name string, a dnsAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.zone[strings.ToLower(name)] = a
}

// count is how many queries of type typ for name the server received.
func (s *dnsServer) count(name string, typ dnsmessage.Type) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[dnsKey{strings.ToLower(name), typ}]
}

func (s *dnsServer) serveUDP(pc net.PacketConn) {
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp := s.answer(buf[:n], 512); resp != nil {
			pc.WriteTo(resp, from)
		}
	}
}

func (s *dnsServer) serveTCP(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			for {
				c.SetDeadline(time.Now().Add(10 * time.Second))
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				msg := make([]byte, binary.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(c, msg); err != nil {
					return
				}
				resp := s.answer(msg, 65535)
				if resp == nil {
					return
				}
				if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(resp))), resp...)); err != nil {
					return
				}
			}
		}()
	}
}

// answer builds the response to one query, nil when the query cannot be parsed. A response
// longer than limit is sent truncated (TC), with no answers, so that the client retries on TCP.
func (s *dnsServer) answer(query []byte, limit int) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))

	s.mu.Lock()
	key := dnsKey{name, q.Type}
	n := s.queries[key]
	s.queries[key] = n + 1
	zone, known := s.zone[name]
	s.mu.Unlock()

	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	var addrs []netip.Addr
	switch {
	case !known:
		rh.RCode = dnsmessage.RCodeNameError
	case q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET:
		addrs = zone(n)
	}
	resp, err := buildDNS(rh, q, addrs)
	if err != nil {
		return nil
	}
	if len(resp) > limit {
		rh.Truncated = true
		resp, _ = buildDNS(rh, q, nil)
	}
	return resp
}

func buildDNS(h dnsmessage.Header, q dnsmessage.Question, addrs []netip.Addr) ([]byte, error) {
	b := dnsmessage.NewBuilder(nil, h)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	for _, a := range addrs {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 0}
		if err := b.AResource(rh, dnsmessage.AResource{A: a.As4()}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// useResolver makes processes started in ns with `ip netns exec` (the sluice binary among
// them) use nameserver: ip netns exec bind-mounts /etc/netns/NAME/resolv.conf over
// /etc/resolv.conf. It checks that the mount takes effect and removes the file at the end
// of the test.
func useResolver(t *testing.T, ns *testnet.NS, nameserver netip.Addr) {
	t.Helper()
	const base = "/etc/netns"
	_, statErr := os.Stat(base)
	dir := filepath.Join(base, ns.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
		if errors.Is(statErr, os.ErrNotExist) {
			os.Remove(base) // only if we made it, and only if empty
		}
	})
	want := "nameserver " + nameserver.String() + "\n"
	mustWrite(t, filepath.Join(dir, "resolv.conf"), want, 0o644)
	got, err := ns.Run(t, "cat", "/etc/resolv.conf")
	if err != nil || got != want {
		t.Fatalf("resolv.conf in %s is %q (%v), want %q", ns.Name, got, err, want)
	}
}
