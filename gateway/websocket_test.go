package gateway_test

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/internal/testnet"
	"github.com/sluice-egress/sluice/scanner"
)

const wsPolicy = `
version: 1
upstream:
  hosts:
    ws.example.test: 127.0.0.1
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: ws.example.test
            ports: [%d]
            websocket: true
`

// wsMaxMessage is the scanner's body limit in these tests, and the
// gateway's MaxWebSocketMessage: the largest message it holds.
const wsMaxMessage = 64 << 10

// wsWorld is a gateway with a real scanner in front of a WebSocket echo
// upstream that records, per connection, every frame it received.
type wsWorld struct {
	gw        *gateway.Gateway
	proxyAddr string
	token     string
	cas       *ca.Store
	sink      *recordingSink
	port      int
	authority string

	mu    sync.Mutex
	conns map[string]*wsSeen // by the ?name= of the upgrade
}

// wsSeen is what the upstream saw on one WebSocket.
type wsSeen struct {
	header http.Header
	frames []string // payloads of data frames, unmasked
	close  int      // status code of the client's Close; 0: none yet
}

func newWSWorld(t *testing.T, sc gateway.Scanner) *wsWorld {
	t.Helper()
	dir := t.TempDir()
	w := &wsWorld{token: randomToken(t), sink: &recordingSink{}, conns: map[string]*wsSeen{}}
	upCA := testnet.NewTestCA(t, "upstream")
	srv := &http.Server{Handler: http.HandlerFunc(w.echo), TLSConfig: upCA.ServerTLS(t, "ws.example.test")}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.port = l.Addr().(*net.TCPAddr).Port
	w.authority = net.JoinHostPort("ws.example.test", strconv.Itoa(w.port))
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })

	engine := acmePolicy(t, dir, w.token, fmt.Sprintf(wsPolicy, w.port))
	w.cas = &ca.Store{Dir: filepath.Join(dir, "ca")}
	w.gw = &gateway.Gateway{
		Policy:  engine,
		Leaf:    func(tenant, host string) (*tls.Certificate, error) { return mustAuthority(t, w.cas, tenant).Leaf(host) },
		Dialer:  &guard.Dialer{Hosts: engine.UpstreamHosts(), Deny: withoutLoopback(guard.DefaultDeny()), Self: func() []netip.Addr { return nil }},
		RootCAs: upCA.Pool(),
		Events:  w.sink,
		Scanner: sc,

		MaxWebSocketMessage: wsMaxMessage,
	}
	w.proxyAddr = serveOnLoopback(t, w.gw)
	return w
}

// echo is the upstream: a WebSocket server that echoes each message in one
// frame, answers pings and Close, and records what it got.
func (w *wsWorld) echo(rw http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(rw, "want upgrade", http.StatusBadRequest)
		return
	}
	seen := &wsSeen{header: r.Header.Clone()}
	w.mu.Lock()
	w.conns[r.URL.Query().Get("name")] = seen
	w.mu.Unlock()
	conn, brw, err := http.NewResponseController(rw).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		wsAccept(r.Header.Get("Sec-WebSocket-Key")))
	brw.Flush()
	var msg []byte
	for {
		f, err := readFrame(brw.Reader)
		if err != nil {
			return
		}
		switch f.op {
		case 0x8:
			code := 0
			if len(f.payload) >= 2 {
				code = int(binary.BigEndian.Uint16(f.payload))
			}
			w.mu.Lock()
			seen.close = code
			w.mu.Unlock()
			writeFrame(conn, true, 0x8, f.payload, false)
			return
		case 0x9:
			writeFrame(conn, true, 0xA, f.payload, false)
			continue
		case 0xA:
			continue
		}
		w.mu.Lock()
		seen.frames = append(seen.frames, string(f.payload))
		w.mu.Unlock()
		msg = append(msg, f.payload...)
		if f.fin {
			writeFrame(conn, true, 0x1, msg, false)
			msg = nil
		}
	}
}

// seen returns a copy of what the upstream saw on the WebSocket name.
func (w *wsWorld) seen(name string) wsSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.conns[name]
	if s == nil {
		return wsSeen{}
	}
	return wsSeen{header: s.header, frames: append([]string(nil), s.frames...), close: s.close}
}

// wsEvents returns the events from index from on about WebSocket frames.
// (The upgrade request itself is scanned as any request is.)
func (w *wsWorld) wsEvents(from int) []incident.Incident {
	w.sink.mu.Lock()
	defer w.sink.mu.Unlock()
	var out []incident.Incident
	for _, e := range w.sink.events[from:] {
		if strings.HasPrefix(e.Where, "websocket:") {
			out = append(out, e)
		}
	}
	return out
}

func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// tunnel opens an inspected tunnel to the upstream and returns its TLS connection.
func (w *wsWorld) tunnel(t *testing.T) *tls.Conn {
	t.Helper()
	tc, _ := acmeTunnel(t, w.proxyAddr, w.token, w.cas, "ws.example.test", w.port)
	return tc
}

// dial opens a WebSocket named name through the gateway, sending extra
// header lines, and returns the connection, its reader and the 101 answer.
func (w *wsWorld) dial(t *testing.T, name, extra string) (*tls.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	tc := w.tunnel(t)
	key := make([]byte, 16)
	rand.Read(key)
	fmt.Fprintf(tc, "GET /ws?name=%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n",
		name, w.authority, base64.StdEncoding.EncodeToString(key), extra)
	br := bufio.NewReader(tc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %d %q", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	return tc, br, resp
}

type frame struct {
	fin     bool
	rsv     byte
	op      byte
	payload []byte
}

// writeFrame writes one frame, masked as a client must.
func writeFrame(c io.Writer, fin bool, op byte, payload []byte, masked bool) error {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	return writeRawFrame(c, b0, payload, masked)
}

func writeRawFrame(c io.Writer, b0 byte, payload []byte, masked bool) error {
	hdr := []byte{b0, 0}
	switch n := len(payload); {
	case n < 126:
		hdr[1] = byte(n)
	case n < 1<<16:
		hdr[1] = 126
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr[1] = 127
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	p := append([]byte(nil), payload...)
	if masked {
		hdr[1] |= 0x80
		var key [4]byte
		rand.Read(key[:])
		hdr = append(hdr, key[:]...)
		for i := range p {
			p[i] ^= key[i%4]
		}
	}
	_, err := c.Write(append(hdr, p...))
	return err
}

// readFrame reads one frame and unmasks it.
func readFrame(br *bufio.Reader) (frame, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return frame{}, err
	}
	f := frame{fin: h[0]&0x80 != 0, rsv: h[0] & 0x70, op: h[0] & 0x0f}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return f, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return f, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 1<<24 {
		return f, fmt.Errorf("frame of %d bytes", n)
	}
	var key [4]byte
	masked := h[1]&0x80 != 0
	if masked {
		if _, err := io.ReadFull(br, key[:]); err != nil {
			return f, err
		}
	}
	f.payload = make([]byte, n)
	if _, err := io.ReadFull(br, f.payload); err != nil {
		return f, err
	}
	if masked {
		for i := range f.payload {
			f.payload[i] ^= key[i%4]
		}
	}
	return f, nil
}

// closeCode reads frames until a Close and returns its status code; -1 when
// the connection ended without one.
func closeCode(t *testing.T, br *bufio.Reader) int {
	t.Helper()
	for {
		f, err := readFrame(br)
		if err != nil {
			return -1
		}
		if f.op == 0x8 {
			if len(f.payload) < 2 {
				return 0
			}
			return int(binary.BigEndian.Uint16(f.payload))
		}
	}
}

func fakeSecret(t *testing.T) string {
	t.Helper()
	s, err := scanner.FakeSecret("github-pat")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestWebSocketMessagesAreScanned(t *testing.T) {
	w := newWSWorld(t, &scanner.Scanner{MaxBodyBytes: wsMaxMessage})
	secret := fakeSecret(t)

	t.Run("benign message echoes", func(t *testing.T) {
		tc, br, _ := w.dial(t, "benign", "")
		writeFrame(tc, true, 0x1, []byte("hello upstream"), true)
		// Fragmented, with a ping in between, as RFC 6455 allows.
		writeFrame(tc, false, 0x2, []byte("part one, "), true)
		writeFrame(tc, true, 0x9, []byte("are you there"), true)
		writeFrame(tc, true, 0x0, []byte("part two"), true)
		var got []string
		for len(got) < 3 {
			f, err := readFrame(br)
			if err != nil {
				t.Fatalf("after %q: %v", got, err)
			}
			got = append(got, fmt.Sprintf("%d:%s", f.op, f.payload))
		}
		want := []string{"1:hello upstream", "10:are you there", "1:part one, part two"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("echo %q, want %q", got, want)
		}
		if e := w.wsEvents(0); len(e) != 0 {
			t.Fatalf("events for benign messages: %+v", e)
		}
	})

	t.Run("real client library echoes", func(t *testing.T) {
		tc := w.tunnel(t)
		cfg, err := websocket.NewConfig("wss://"+w.authority+"/ws?name=lib", "https://ws.example.test")
		if err != nil {
			t.Fatal(err)
		}
		ws, err := websocket.NewClient(cfg, tc)
		if err != nil {
			t.Fatal(err)
		}
		if err := websocket.Message.Send(ws, "from x/net"); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil || got != "from x/net" {
			t.Fatalf("echo %q, %v", got, err)
		}
	})

	blocked := []struct {
		name   string
		send   func(c io.Writer)
		reason string
		code   int
		where  string
		passed string // a frame the upstream may see besides "fine": what went before the refused one
	}{
		{name: "secret in a message", reason: "secret-detected", code: 1008, where: "websocket:message[1]",
			send: func(c io.Writer) {
				writeFrame(c, true, 0x1, []byte("fine"), true)
				writeFrame(c, true, 0x1, []byte(`{"token": "`+secret+`"}`), true)
				writeFrame(c, true, 0x1, []byte("after the secret"), true)
			}},
		{name: "secret split across fragments", reason: "secret-detected", code: 1008, where: "websocket:message[0]",
			send: func(c io.Writer) {
				writeFrame(c, false, 0x1, []byte("token="+secret[:15]), true)
				writeFrame(c, true, 0x0, []byte(secret[15:]+" end"), true)
			}},
		// Each half passes alone; the end of one message joined to the
		// start of the next holds the whole token.
		{name: "secret split across messages", reason: "secret-detected", code: 1008, where: "websocket:message[1+2]",
			passed: "token=" + secret[:15],
			send: func(c io.Writer) {
				writeFrame(c, true, 0x1, []byte("fine"), true)
				writeFrame(c, true, 0x1, []byte("token="+secret[:15]), true)
				writeFrame(c, true, 0x1, []byte(secret[15:]+" end"), true)
			}},
		{name: "secret in a ping", reason: "secret-detected", code: 1008, where: "websocket:ping",
			send: func(c io.Writer) { writeFrame(c, true, 0x9, []byte(secret), true) }},
		{name: "oversize message", reason: "body-too-large", code: 1009, where: "websocket:message[0]",
			send: func(c io.Writer) {
				chunk := []byte(strings.Repeat("a", 16<<10))
				writeFrame(c, false, 0x2, chunk, true)
				for range 4 {
					writeFrame(c, false, 0x0, chunk, true)
				}
				writeFrame(c, true, 0x0, chunk, true)
			}},
		{name: "compressed frame (RSV1)", code: 1002,
			send: func(c io.Writer) { writeRawFrame(c, 0x80|0x40|0x1, []byte("deflated?"), true) }},
		{name: "unmasked client frame", code: 1002,
			send: func(c io.Writer) { writeFrame(c, true, 0x1, []byte("bare"), false) }},
	}
	for i, tt := range blocked {
		t.Run(tt.name, func(t *testing.T) {
			name := "blocked" + strconv.Itoa(i)
			before := len(w.sink.reasons())
			tc, br, _ := w.dial(t, name, "")
			tt.send(tc)
			if code := closeCode(t, br); code != tt.code {
				t.Fatalf("client got close %d, want %d", code, tt.code)
			}
			waitFor(t, func() bool { return w.seen(name).close != 0 })
			seen := w.seen(name)
			if seen.close != tt.code {
				t.Fatalf("upstream got close %d, want %d", seen.close, tt.code)
			}
			for _, f := range seen.frames {
				if f != "fine" && (tt.passed == "" || f != tt.passed) {
					t.Fatalf("upstream saw a frame of the refused message or after it: %d bytes", len(f))
				}
			}
			events := w.wsEvents(before)
			if tt.reason == "" {
				if len(events) != 0 {
					t.Fatalf("events for a protocol error: %+v", events)
				}
				return
			}
			var found bool
			for _, e := range events {
				if strings.Contains(e.Snippet, secret) || strings.Contains(e.Where, secret) {
					t.Fatal("event holds the secret")
				}
				if e.Reason == tt.reason && e.Action == "block" && strings.HasPrefix(e.Where, tt.where) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no %s event at %s: %+v", tt.reason, tt.where, events)
			}
		})
	}

	t.Run("permessage-deflate is not negotiated", func(t *testing.T) {
		_, _, resp := w.dial(t, "deflate", "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n")
		if v := w.seen("deflate").header.Values("Sec-WebSocket-Extensions"); len(v) != 0 {
			t.Fatalf("upstream was offered %q", v)
		}
		if v := resp.Header.Get("Sec-WebSocket-Extensions"); v != "" {
			t.Fatalf("client got extensions %q", v)
		}
	})
}

// Without a Scanner, an allowed WebSocket is spliced as before, extensions
// included: nothing is parsed.
func TestWebSocketWithoutScannerIsUnchanged(t *testing.T) {
	w := newWSWorld(t, nil)
	secret := fakeSecret(t)
	tc, br, _ := w.dial(t, "plain", "Sec-WebSocket-Extensions: permessage-deflate\r\n")
	writeFrame(tc, true, 0x1, []byte(secret), true)
	f, err := readFrame(br)
	if err != nil || string(f.payload) != secret {
		t.Fatalf("echo: %v", err)
	}
	if v := w.seen("plain").header.Get("Sec-WebSocket-Extensions"); v == "" {
		t.Fatal("extensions stripped without a scanner")
	}
}
