// Package sandboxdns is the resolver that sandboxes use: it answers the gateway's own names
// and, in transparent mode, the names a tenant's policy allows, always with the gateway's
// address, and refuses everything else without ever forwarding a query.
package sandboxdns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Mode is how the sandbox reaches the outside, and so which names the resolver answers.
type Mode int

const (
	// Explicit: the sandbox uses the proxy (HTTPS_PROXY), which resolves upstream names
	// itself; the resolver answers the gateway's own names and refuses all others.
	Explicit Mode = iota
	// Transparent: the sandbox connects to names directly and its traffic is steered to
	// the gateway; the resolver answers names the policy allows with the gateway's address.
	Transparent
)

// String returns "explicit" or "transparent".
func (m Mode) String() string {
	switch m {
	case Explicit:
		return "explicit"
	case Transparent:
		return "transparent"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ParseMode parses "explicit" (or "") and "transparent".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "explicit":
		return Explicit, nil
	case "transparent":
		return Transparent, nil
	}
	return 0, fmt.Errorf("sandboxdns: mode %q: want explicit or transparent", s)
}

// NameQuery is what a Policy decides on.
type NameQuery struct {
	// Identity is the sandbox the query comes from.
	Identity Identity
	// Name is the queried name: lower case, no trailing dot, no escapes.
	Name string
}

// Verdict is a Policy's answer.
type Verdict struct {
	// Allow is set when the sandbox may reach Name through the gateway.
	Allow bool
	// Reason says why not, e.g. "host-not-allowed" or "run-ended"; "" reads as
	// "host-not-allowed".
	Reason string
}

// Policy decides whether a sandbox may reach a name. Only transparent mode asks it.
type Policy interface {
	AllowName(q NameQuery) Verdict
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(q NameQuery) Verdict

// AllowName calls f.
func (f PolicyFunc) AllowName(q NameQuery) Verdict { return f(q) }

// Server answers sandboxes' queries. Its exported fields are set before Serve and not
// changed after; the interfaces it holds must be safe for concurrent use.
type Server struct {
	// Mode is Explicit (the zero value) or Transparent.
	Mode Mode
	// Names are the gateway's own names, answered in both modes with Addrs. Nil means
	// ["sluice.internal"]; an empty non-nil slice means none.
	Names []string
	// Addrs are the gateway's addresses as sandboxes reach it: A queries get the IPv4
	// ones, AAAA queries the IPv6 ones. Empty means the UDP listener's address, which
	// must then be a specific one.
	Addrs []netip.Addr
	// TTL of the answers; 0 means 30s. The answer is the gateway whatever the name, so a
	// long TTL costs nothing but the delay before a policy change shows in lookups (the
	// gateway decides again on every connection anyway).
	TTL time.Duration

	// Sources tells whose sandbox a source address is. Nil refuses every query.
	Sources Sources
	// Policy decides names in transparent mode. Nil refuses every name but Names.
	Policy Policy
	// Labels finds data in names; nil means LabelCheck{}. Names it has findings in are
	// refused in both modes.
	Labels LabelScanner
	// Events receives refused queries; nil discards them.
	Events EventSink
	// RecordName, when set, is applied to a refused query's name (already
	// redacted label by label) before it is logged and recorded: the
	// gateway's own reading of a refused host (gateway.EvidenceHost).
	RecordName func(ctx context.Context, tenant, name string) string
	// Logger logs refusals at Info and answers at Debug; nil means slog.Default().
	Logger *slog.Logger

	// QueriesPerSecond and Burst bound each source address's queries; 0 means 50 per
	// second with a burst of 200 (a package install resolves a few dozen names at once).
	// A query over the limit is refused.
	QueriesPerSecond float64
	Burst            int
	// EventsPerSecond bounds each source's events and refusal log lines (burst 20); 0
	// means 2. Refusals past it are still refused, just not recorded one by one.
	EventsPerSecond float64
	// MaxSources bounds how many source addresses' limiters are kept; 0 means 4096. The
	// least recently seen source is forgotten first.
	MaxSources int

	// now is time.Now unless a test replaces it.
	now func() time.Time

	initOnce sync.Once
	names    map[string]bool
	lim      *limiters
	addrs    []netip.Addr
	initErr  error
}

// init fills in the defaults once. listenAddr is the UDP listener's address, for Addrs.
func (s *Server) init(listenAddr netip.Addr) error {
	s.initOnce.Do(func() {
		if s.now == nil {
			s.now = time.Now
		}
		names := s.Names
		if names == nil {
			names = []string{"sluice.internal"}
		}
		s.names = map[string]bool{}
		for _, n := range names {
			nn, ok := normalizeName(dns.Fqdn(n))
			if !ok {
				s.initErr = fmt.Errorf("sandboxdns: name %q: not a host name", n)
				return
			}
			s.names[nn] = true
		}
		s.addrs = nil
		for _, a := range s.Addrs {
			s.addrs = append(s.addrs, a.Unmap())
		}
		if len(s.addrs) == 0 {
			listenAddr = listenAddr.Unmap()
			if !listenAddr.IsValid() || listenAddr.IsUnspecified() {
				s.initErr = errors.New("sandboxdns: Addrs: the gateway's address is needed when listening on all addresses")
				return
			}
			s.addrs = []netip.Addr{listenAddr}
		}
		qps, burst := s.QueriesPerSecond, s.Burst
		if qps <= 0 {
			qps = 50
		}
		if burst <= 0 {
			burst = 200
		}
		eps := s.EventsPerSecond
		if eps <= 0 {
			eps = 2
		}
		maxSources := s.MaxSources
		if maxSources <= 0 {
			maxSources = 4096
		}
		s.lim, s.initErr = newLimiters(maxSources, qps, burst, eps, 20)
	})
	return s.initErr
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) events() EventSink {
	if s.Events != nil {
		return s.Events
	}
	return discard{}
}

func (s *Server) labels() LabelScanner {
	if s.Labels != nil {
		return s.Labels
	}
	return LabelCheck{}
}

// ListenAndServe listens on addr (host:port) over UDP and TCP and serves until ctx is done.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return fmt.Errorf("sandboxdns: listen udp %s: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		pc.Close()
		return fmt.Errorf("sandboxdns: listen tcp %s: %w", addr, err)
	}
	return s.Serve(ctx, pc, ln)
}

// Serve answers queries on pc (UDP) and ln (TCP) until ctx is done or one of them fails,
// then closes both. Either may be nil, not both. It returns nil after ctx is done.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn, ln net.Listener) error {
	var listenAddr netip.Addr
	switch {
	case pc != nil:
		listenAddr = addrOf(pc.LocalAddr()).Addr()
	case ln != nil:
		listenAddr = addrOf(ln.Addr()).Addr()
	default:
		return errors.New("sandboxdns: Serve: no listener")
	}
	if err := s.init(listenAddr); err != nil {
		if pc != nil {
			pc.Close()
		}
		if ln != nil {
			ln.Close()
		}
		return err
	}
	var servers []*dns.Server
	if pc != nil {
		servers = append(servers, s.dnsServer(&dns.Server{PacketConn: pc}))
	}
	if ln != nil {
		servers = append(servers, s.dnsServer(&dns.Server{
			Listener: ln,
			// A sandbox holding connections open must not hold the resolver: a few
			// queries per connection, idle ones closed.
			MaxTCPQueries: 128,
			IdleTimeout:   func() time.Duration { return 10 * time.Second },
		}))
	}
	errc := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { errc <- srv.ActivateAndServe() }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		if err != nil {
			err = fmt.Errorf("sandboxdns: serve: %w", err)
		}
	}
	for _, srv := range servers {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.ShutdownContext(sctx) // an error means it had stopped already
		cancel()
	}
	return err
}

// dnsServer completes srv with what every listener shares.
func (s *Server) dnsServer(srv *dns.Server) *dns.Server {
	srv.Handler = s
	srv.MsgAcceptFunc = acceptQuery
	srv.ReadTimeout = 5 * time.Second
	srv.WriteTimeout = 5 * time.Second
	return srv
}

// acceptQuery lets through plain queries with one question and at most an OPT record:
// no NOTIFY, UPDATE or IXFR (whose authority section holds a SOA), no TSIG. Responses
// are dropped unanswered; the rest get FORMERR or NOTIMP with no question echoed.
func acceptQuery(h dns.Header) dns.MsgAcceptAction {
	const qr = 1 << 15
	if h.Bits&qr != 0 {
		return dns.MsgIgnore
	}
	if opcode := int(h.Bits>>11) & 0xF; opcode != dns.OpcodeQuery {
		return dns.MsgRejectNotImplemented
	}
	if h.Qdcount != 1 || h.Ancount != 0 || h.Nscount != 0 || h.Arcount > 1 {
		return dns.MsgReject
	}
	return dns.MsgAccept
}

// ServeDNS implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	if err := s.init(netip.Addr{}); err != nil {
		return // Serve reported it; a handler mounted elsewhere answers nothing
	}
	proto := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		proto = "tcp"
	}
	resp := s.respond(context.Background(), addrOf(w.RemoteAddr()), proto, req)
	if resp == nil {
		return
	}
	if proto == "udp" {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
		resp.Truncate(size)
	}
	if err := w.WriteMsg(resp); err != nil {
		s.logger().Debug("sandboxdns: write answer", "client", w.RemoteAddr().String(), "err", err)
	}
}

// addrOf is a's address and port, unmapped; the zero value for other kinds of address.
func addrOf(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.UDPAddr:
		ap = a.AddrPort()
	case *net.TCPAddr:
		ap = a.AddrPort()
	}
	return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
}

// normalizeName turns a question's name (presentation format, fully qualified) into a host
// name: lower case, no trailing dot. Escaped bytes (\. or \DDD) and the root are not host
// names: false.
func normalizeName(fqdn string) (string, bool) {
	if strings.ContainsRune(fqdn, '\\') || fqdn == "." || fqdn == "" {
		return "", false
	}
	if _, ok := dns.IsDomainName(fqdn); !ok {
		return "", false
	}
	name := strings.ToLower(strings.TrimSuffix(fqdn, "."))
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'a' <= b && b <= 'z', '0' <= b && b <= '9', b == '-', b == '.', b == '_':
		default:
			return "", false
		}
	}
	if strings.Contains(name, "..") || strings.HasPrefix(name, ".") {
		return "", false
	}
	return name, true
}
