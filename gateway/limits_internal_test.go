package gateway

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// allowAll identifies every client as tenant t and allows everything.
type allowAll struct{}

func (allowAll) Identify(string, string) (rules.Identity, error) {
	return rules.Identity{Tenant: "t", Class: "agent"}, nil
}
func (allowAll) Decide(rules.Query) rules.Decision              { return rules.Decision{Action: rules.Allow} }
func (allowAll) AllowedAddresses(rules.Decision) []netip.Prefix { return nil }

type noDialer struct{}

func (noDialer) Dial(context.Context, guard.Target) (net.Conn, error) {
	return nil, errors.New("no upstream in this test")
}

type scanFunc func(ctx context.Context, req *scanner.Request) (*scanner.Result, error)

func (f scanFunc) Scan(ctx context.Context, req *scanner.Request) (*scanner.Result, error) {
	return f(ctx, req)
}

// watchedBody counts its reads.
type watchedBody struct {
	r     io.Reader
	reads atomic.Int64
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	return b.r.Read(p)
}

func proxyRequest(method, target string, body io.Reader, n int64) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.ContentLength = n
	r.Header.Set("Proxy-Authorization", "Basic dDp0b2tlbg==") // t:token
	return r
}

// Hole 2: the form read that looks for _method happens within the request's
// scan memory: with none left, the body is not read at all.
func TestFormIsReadOnlyWithinScanMemory(t *testing.T) {
	entered, unblock := make(chan struct{}), make(chan struct{})
	g := &Gateway{Policy: allowAll{}, Dialer: noDialer{}, Logger: slog.New(slog.DiscardHandler),
		ScanMemory: 64 << 10, ScanBodyLimit: 64 << 10, ScanWait: 200 * time.Millisecond,
		Scanner: scanFunc(func(ctx context.Context, req *scanner.Request) (*scanner.Result, error) {
			if req.URL.Path == "/hold" {
				close(entered)
				<-unblock
			}
			return &scanner.Result{Body: req.Body, BodyLen: -1}, nil
		})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.ServeHTTP(httptest.NewRecorder(), proxyRequest("POST", "http://api.test/hold", strings.NewReader(strings.Repeat("x", 64<<10)), 64<<10))
	}()
	<-entered
	body := &watchedBody{r: strings.NewReader("_method=DELETE&a=b")}
	r := proxyRequest("POST", "http://api.test/form", body, 18)
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, r)
	close(unblock)
	<-done
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Sluice-Reason") != ReasonScanBusy {
		t.Fatalf("form with no scan memory left: %d %q, want 503 scan-busy", rec.Code, rec.Header().Get("Sluice-Reason"))
	}
	if n := body.reads.Load(); n != 0 {
		t.Fatalf("the form was read (%d reads) before its memory was reserved", n)
	}
}

// Hole 2: a WebSocket frame costs memory only as its bytes arrive, and what
// a message holds while it is scanned (the gateway's copy and the
// scanner's) is counted in ScanMemory and given back once forwarded.
func TestWebSocketMessageIsCounted(t *testing.T) {
	var during atomic.Int64
	g := &Gateway{Logger: slog.New(slog.DiscardHandler), ScanMemory: 1 << 20, Policy: allowAll{}}
	g.Scanner = scanFunc(func(ctx context.Context, req *scanner.Request) (*scanner.Result, error) {
		during.Store(g.budget.inUse())
		return &scanner.Result{}, nil
	})
	s := &wsSession{g: g, r: httptest.NewRequest("GET", "/ws", nil), max: 256 << 10,
		hold: &scanHold{b: g.scanBudget(), tenant: "t"}}
	pr, pw := io.Pipe()
	type stepped struct {
		out [][]byte
		err error
	}
	res := make(chan stepped, 1)
	go func() {
		out, err := s.step(bufio.NewReader(pr))
		res <- stepped{out, err}
	}()
	const size = 200 << 10
	key := [4]byte{1, 2, 3, 4}
	hdr := append(binary.BigEndian.AppendUint64([]byte{0x82, 0x80 | 127}, size), key[:]...)
	pw.Write(append(hdr, make([]byte, 10)...))
	time.Sleep(50 * time.Millisecond)
	if n := g.budget.inUse(); n > wsReadChunk {
		t.Fatalf("a header claiming %d bytes, 10 of them sent, holds %d", size, n)
	}
	payload := make([]byte, size-10)
	mask(payload, key)
	pw.Write(payload)
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	if n := during.Load(); n < 2*size {
		t.Fatalf("a %d-byte message held %d bytes of ScanMemory during its scan, want both copies", size, n)
	}
	var sent int
	for _, p := range r.out {
		sent += len(p)
	}
	if sent != len(hdr)+size {
		t.Fatalf("forwarded %d bytes, want the %d-byte frame", sent, len(hdr)+size)
	}
	s.hold.release()
	if n := g.budget.inUse(); n != 0 {
		t.Fatalf("%d bytes still held after the message went on", n)
	}
}

// Fair shares: a tenant that holds may not take the last of the pool, and a
// newcomer gets what is free at once.
func TestScanBudgetShares(t *testing.T) {
	b := newScanBudget(100)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var got int64
	for {
		n, ok := b.acquire(ctx, "hog", 10)
		if !ok {
			break
		}
		got += n
	}
	if got > 50 {
		t.Fatalf("one tenant alone took %d of 100", got)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, ok := b.acquire(ctx2, "other", 40); !ok {
		t.Fatal("a second tenant found no room")
	}
	// A waiter is served when room comes back, even behind a larger one.
	done := make(chan bool, 2)
	go func() { _, ok := b.acquire(context.Background(), "big", 100); done <- ok }()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, ok := b.acquire(ctx, "small", 10)
		done <- ok
	}()
	time.Sleep(20 * time.Millisecond)
	b.release("other", 40)
	if !<-done {
		t.Fatal("the small waiter was not served")
	}
}

// What a body inflates to is taken from the request's scan memory as it
// inflates, not held beside it uncounted: a small gzip body that inflates
// past what is free is answered 503 scan-busy and nothing is forwarded; one
// that fits goes on; and all of it is given back once the requests end.
func TestInflatedBodyIsCounted(t *testing.T) {
	var forwarded atomic.Int32
	g := &Gateway{Policy: allowAll{}, Logger: slog.New(slog.DiscardHandler),
		Dialer:     dialFunc(func() { forwarded.Add(1) }),
		ScanMemory: 512 << 10, ScanBodyLimit: 8 << 20, ScanWait: 100 * time.Millisecond,
		Scanner: &scanner.Scanner{}}
	gz := func(n int) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(strings.Repeat("the agent writes a patch. ", n/26)))
		zw.Close()
		return b.Bytes()
	}
	for name, tc := range map[string]struct {
		body []byte
		busy bool
	}{
		"inflates past the scan memory": {gz(4 << 20), true},
		"inflates within it":            {gz(64 << 10), false},
	} {
		forwarded.Store(0)
		r := proxyRequest("POST", "http://api.test/up", bytes.NewReader(tc.body), int64(len(tc.body)))
		r.Header.Set("Content-Encoding", "gzip")
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, r)
		busy := rec.Code == http.StatusServiceUnavailable && rec.Header().Get("Sluice-Reason") == ReasonScanBusy
		if busy != tc.busy || busy && forwarded.Load() != 0 {
			t.Errorf("%s: %d %q, forwarded %d times", name, rec.Code, rec.Header().Get("Sluice-Reason"), forwarded.Load())
		}
		if n := g.budget.inUse(); n != 0 {
			t.Errorf("%s: %d bytes of scan memory still held after the request", name, n)
		}
	}
}

// dialFunc is a dialer that notes each dial and has no upstream.
type dialFunc func()

func (f dialFunc) Dial(context.Context, guard.Target) (net.Conn, error) {
	f()
	return nil, errors.New("no upstream in this test")
}
