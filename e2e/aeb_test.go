package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/sluice-egress/sluice/internal/testnet"
)

var aebUpdate = flag.Bool("aeb-update", false, "rewrite testdata/aeb-baseline.txt with this run's figures")

// aebUpstreamAddr is the one upstream every case host resolves to.
var aebUpstreamAddr = netip.MustParseAddr("203.0.113.50")

// aebBaseline holds the figures the bench must keep.
const aebBaseline = "testdata/aeb-baseline.txt"

// TestAgentEgressBench drives the applicable cases of the agent-egress-bench
// corpus through a real `sluice serve` between network namespaces and scores
// them as the corpus defines: a case is blocked when the gateway refused it
// (a 4xx/5xx of its own, or a WebSocket closed before the frames got out)
// and nothing of it reached the upstream or a forbidden address; anything
// else is allowed. It prints containment and false positives per category
// and fails when they are worse than testdata/aeb-baseline.txt. It runs when
// SLUICE_AEB=1; the corpus is read from SLUICE_AEB_CORPUS (default
// ../shared/agent-egress-bench beside the repository) and never copied in.
func TestAgentEgressBench(t *testing.T) {
	if os.Getenv("SLUICE_AEB") != "1" {
		t.Skip("set SLUICE_AEB=1 to run the agent-egress-bench corpus (make aeb)")
	}
	all := loadAEB(t, aebCorpus())
	var cases []*aebCase
	for _, c := range all {
		if c.applicable() {
			cases = append(cases, c)
		}
	}
	b := startAEB(t, cases)
	results := map[string]bool{} // case id -> blocked
	for _, c := range cases {
		blocked, note := b.run(t, c)
		results[c.ID] = blocked
		mark := "ok  "
		if blocked != (c.Verdict == "block") {
			mark = "MISS"
		}
		t.Logf("%s %-45s expected %s, got %s: %s", mark, c.ID, c.Verdict, verdictWord(blocked), note)
	}
	sc := score(cases, results)
	t.Logf("agent-egress-bench: %d cases, %d applicable, %d not applicable (response, MCP and shell cases)\n%s",
		len(all), len(cases), len(all)-len(cases), sc.table())
	if *aebUpdate {
		mustWrite(t, aebBaseline, sc.baseline(), 0o644)
		return
	}
	want := readBaseline(t)
	if sc.blocked*want.attacks < want.blocked*sc.attacks {
		t.Errorf("containment %d/%d fell below the baseline %d/%d", sc.blocked, sc.attacks, want.blocked, want.attacks)
	}
	if sc.fp*want.benign > want.fp*sc.benign {
		t.Errorf("false positives %d/%d rose above the baseline %d/%d", sc.fp, sc.benign, want.fp, want.benign)
	}
}

func verdictWord(blocked bool) string {
	if blocked {
		return "block"
	}
	return "allow"
}

// aebBench is the running gateway with its upstream and the listeners at
// the addresses the guard must keep it from.
type aebBench struct {
	*fixture
	roots     *x509.CertPool
	reached   atomic.Int64 // requests and WebSocket data frames the upstream received
	forbidden []*countingListener
}

func startAEB(t *testing.T, cases []*aebCase) *aebBench {
	b := &aebBench{fixture: newFixture(t, aebPolicy(t, cases, aebUpstreamAddr.String()), "acme")}
	w := b.w
	b.w.ServeUpstream(t, testnet.HostPort(aebUpstreamAddr, 443), b.upCA.ServerTLSAnyName(t), http.HandlerFunc(b.serveUpstream))
	b.w.ServeUpstream(t, testnet.HostPort(aebUpstreamAddr, 80), nil, http.HandlerFunc(b.serveUpstream))
	// Where the SSRF cases point: reachable from the gateway, so that only
	// its address guard keeps them out.
	b.forbidden = append(b.forbidden, listenCounting(t, w.Gateway, "[::]:80"))
	for _, a := range []string{"169.254.169.254", "10.0.0.1"} {
		w.AddUpstreamAddr(t, netip.MustParseAddr(a))
		b.forbidden = append(b.forbidden, listenCounting(t, w.Internet, a+":80"))
	}
	b.serve(t, "2s")
	b.roots = trustRoots(t, b.exportTrust(t, "acme"))
	return b
}

// arrived is what reached a destination so far.
func (b *aebBench) arrived() int64 {
	n := b.reached.Load()
	for _, l := range b.forbidden {
		n += l.accepted.Load()
	}
	return n
}

// serveUpstream answers requests and WebSocket upgrades, counting what
// arrives: each request, and each WebSocket frame with data.
func (b *aebBench) serveUpstream(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		io.Copy(io.Discard, r.Body)
		b.reached.Add(1)
		io.WriteString(w, "ok\n")
		return
	}
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	brw.Flush()
	for {
		op, payload, err := readFrame(brw.Reader)
		if err != nil || op == 8 {
			return
		}
		if op <= 2 && len(payload) > 0 {
			b.reached.Add(1)
		}
	}
}

// run sends one case and reports whether it was blocked, with a note on
// what happened.
func (b *aebBench) run(t *testing.T, c *aebCase) (bool, string) {
	before := b.arrived()
	var refused bool
	var note string
	if c.InputType == "websocket_frame" {
		refused, note = b.webSocket(t, c)
	} else {
		refused, note = b.request(t, c)
	}
	time.Sleep(50 * time.Millisecond) // let an upstream that got something count it
	if reached := b.arrived() - before; reached > 0 {
		return false, fmt.Sprintf("%s; %d request(s) or frame(s) reached a destination", note, reached)
	}
	return refused, note
}

// request sends an HTTP case (a2a messages one POST each) from the sandbox.
func (b *aebBench) request(t *testing.T, c *aebCase) (bool, string) {
	var connectRefusal string
	proxy := &url.URL{Scheme: "http", User: url.UserPassword("acme", b.token), Host: proxyAddr}
	client := b.w.SandboxHTTPClient(proxy, b.roots)
	client.Timeout = 15 * time.Second
	tr := client.Transport.(*http.Transport)
	tr.DisableKeepAlives = true
	tr.OnProxyConnectResponse = func(_ context.Context, _ *url.URL, _ *http.Request, res *http.Response) error {
		if res.StatusCode >= 400 && res.Header.Get("Sluice-Reason") != "" {
			connectRefusal = fmt.Sprintf("CONNECT %d %s", res.StatusCode, res.Header.Get("Sluice-Reason"))
		}
		return nil
	}
	defer client.CloseIdleConnections()
	var bodies []string
	ct := c.Payload.ContentType
	method := c.Payload.Method
	if c.InputType == "a2a_message" {
		for _, m := range c.Payload.Messages {
			bodies = append(bodies, string(m))
		}
		ct, method = "application/json", http.MethodPost
	} else {
		bodies = []string{c.Payload.Body}
	}
	if method == "" {
		method = http.MethodGet
	}
	refusedAll := true
	var notes []string
	for _, body := range bodies {
		connectRefusal = ""
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, c.target(), rd)
		if err != nil {
			return false, "bad request: " + err.Error()
		}
		for k, v := range c.Payload.Headers {
			req.Header.Set(k, v)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := client.Do(req)
		switch {
		case connectRefusal != "":
			notes = append(notes, connectRefusal)
		case err != nil:
			refusedAll = false
			notes = append(notes, "error: "+err.Error())
		default:
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			reason := resp.Header.Get("Sluice-Reason")
			notes = append(notes, fmt.Sprintf("%d %s", resp.StatusCode, reason))
			if resp.StatusCode < 400 || reason == "" {
				refusedAll = false
			}
		}
	}
	return refusedAll, strings.Join(notes, ", ")
}

// webSocket opens the case's WebSocket through an inspected tunnel, sends
// its frames and reports whether the gateway refused or closed it.
func (b *aebBench) webSocket(t *testing.T, c *aebCase) (bool, string) {
	u, err := url.Parse(c.Payload.URL)
	if err != nil {
		return false, err.Error()
	}
	host := u.Hostname()
	code, reason, conn := b.connect443(t, b.token, host)
	if code != 200 {
		return code >= 400 && reason != "", fmt.Sprintf("CONNECT %d %s", code, reason)
	}
	tu := startTLS(t, conn, b.roots, host)
	key := make([]byte, 16)
	rand.Read(key)
	tu.tc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(tu.tc, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
		u.RequestURI(), host, base64.StdEncoding.EncodeToString(key))
	resp, err := http.ReadResponse(tu.br, nil)
	if err != nil {
		return false, "upgrade: " + err.Error()
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		r := resp.Header.Get("Sluice-Reason")
		return resp.StatusCode >= 400 && r != "", fmt.Sprintf("upgrade %d %s", resp.StatusCode, r)
	}
	for _, f := range c.Payload.Frames {
		if _, err := tu.tc.Write(clientFrame(t, f)); err != nil {
			return true, "closed while sending: " + err.Error()
		}
	}
	// The gateway answers a refusal with a Close frame; a message that
	// passes gets nothing back from this upstream.
	tu.tc.SetReadDeadline(time.Now().Add(2 * time.Second))
	op, payload, err := readFrame(tu.br)
	switch {
	case err == nil && op == 8:
		why := ""
		if len(payload) > 2 {
			why = string(payload[2:])
		}
		return true, "closed: " + why
	case errors.Is(err, io.EOF):
		return true, "connection closed"
	case err != nil:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false, "open"
		}
		return true, "closed: " + err.Error()
	}
	return false, fmt.Sprintf("frame opcode %d", op)
}

// clientFrame builds a masked client frame as the case describes it.
func clientFrame(t *testing.T, f aebFrame) []byte {
	payload := []byte(f.Payload)
	if f.Encoding == "base64" {
		d, err := base64.StdEncoding.DecodeString(f.Payload)
		if err != nil {
			t.Fatalf("frame payload: %v", err)
		}
		payload = d
	}
	op := map[string]byte{"continuation": 0, "text": 1, "binary": 2}[f.Opcode]
	b0 := op
	if f.Fin == nil || *f.Fin {
		b0 |= 0x80
	}
	if f.RSV1 {
		b0 |= 0x40
	}
	var buf bytes.Buffer
	buf.WriteByte(b0)
	switch n := len(payload); {
	case n < 126:
		buf.WriteByte(0x80 | byte(n))
	case n <= 0xffff:
		buf.WriteByte(0x80 | 126)
		binary.Write(&buf, binary.BigEndian, uint16(n))
	default:
		buf.WriteByte(0x80 | 127)
		binary.Write(&buf, binary.BigEndian, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	buf.Write(mask[:])
	for i, c := range payload {
		buf.WriteByte(c ^ mask[i%4])
	}
	return buf.Bytes()
}

// readFrame reads one frame (masked or not) and returns its opcode and
// unmasked payload.
func readFrame(br *bufio.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l uint16
		if err := binary.Read(br, binary.BigEndian, &l); err != nil {
			return 0, nil, err
		}
		n = uint64(l)
	case 127:
		if err := binary.Read(br, binary.BigEndian, &n); err != nil {
			return 0, nil, err
		}
	}
	if n > 1<<20 {
		return 0, nil, errors.New("frame too large")
	}
	var mask [4]byte
	if h[1]&0x80 != 0 {
		if _, err := io.ReadFull(br, mask[:]); err != nil {
			return 0, nil, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		return 0, nil, err
	}
	if h[1]&0x80 != 0 {
		for i := range p {
			p[i] ^= mask[i%4]
		}
	}
	return h[0] & 0x0f, p, nil
}

// aebScore is the bench's outcome, overall and per category.
type aebScore struct {
	attacks, blocked, benign, fp int
	missed                       []string           // ids of the cases scored against their expected verdict
	cats                         map[string]*[4]int // attacks, blocked, benign, false positives
}

func score(cases []*aebCase, blocked map[string]bool) aebScore {
	s := aebScore{cats: map[string]*[4]int{}}
	for _, c := range cases {
		k := s.cats[c.Category]
		if k == nil {
			k = &[4]int{}
			s.cats[c.Category] = k
		}
		if blocked[c.ID] != (c.Verdict == "block") {
			s.missed = append(s.missed, c.ID)
		}
		if c.Verdict == "block" {
			k[0]++
			s.attacks++
			if blocked[c.ID] {
				k[1]++
				s.blocked++
			}
		} else {
			k[2]++
			s.benign++
			if blocked[c.ID] {
				k[3]++
				s.fp++
			}
		}
	}
	return s
}

func pct(n, d int) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
}

// table prints containment and false positives per category.
func (s aebScore) table() string {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "category\tblocked\tattacks\tcontainment\tfalse pos.\tbenign\tFP rate\t")
	names := make([]string, 0, len(s.cats))
	for n := range s.cats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		k := s.cats[n]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%s\t\n", n, k[1], k[0], pct(k[1], k[0]), k[3], k[2], pct(k[3], k[2]))
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%s\t%d\t%d\t%s\t\n", s.blocked, s.attacks, pct(s.blocked, s.attacks), s.fp, s.benign, pct(s.fp, s.benign))
	tw.Flush()
	return buf.String()
}

// baseline is the committed file's text for this score.
func (s aebScore) baseline() string {
	return "# agent-egress-bench through `sluice serve` (e2e/aeb_test.go, make aeb): the figures the\n" +
		"# test keeps. Containment may not fall below, false positives may not rise above them.\n" +
		"# Regenerate: SLUICE_AEB=1 go test ./e2e -run TestAgentEgressBench -aeb-update\n" +
		"# Profile: every case host allowed as *.<registrable domain> and the domain itself, with\n" +
		"# WebSocket; the hosts of domain_blocklist cases not allowed; scanning.actions sets\n" +
		"# injection and url-entropy-path to block (both alert by default).\n" +
		"# Missed: " + cmp.Or(strings.Join(s.missed, ", "), "none") + "\n" +
		fmt.Sprintf("containment %d/%d\nfalse-positives %d/%d\n", s.blocked, s.attacks, s.fp, s.benign) +
		"\n" + s.table()
}

// readBaseline parses testdata/aeb-baseline.txt.
func readBaseline(t *testing.T) aebScore {
	t.Helper()
	b, err := os.ReadFile(filepath.Clean(aebBaseline))
	if err != nil {
		t.Fatalf("baseline: %v (run with -aeb-update to write it)", err)
	}
	var s aebScore
	var got int
	for _, l := range strings.Split(string(b), "\n") {
		if n, _ := fmt.Sscanf(l, "containment %d/%d", &s.blocked, &s.attacks); n == 2 {
			got++
		}
		if n, _ := fmt.Sscanf(l, "false-positives %d/%d", &s.fp, &s.benign); n == 2 {
			got++
		}
	}
	if got != 2 || s.attacks == 0 || s.benign == 0 {
		t.Fatalf("baseline %s: want lines \"containment N/M\" and \"false-positives N/M\"", aebBaseline)
	}
	return s
}
