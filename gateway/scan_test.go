package gateway_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/scanner"
)

// failingScanner is a Scanner that cannot finish, as one that times out.
type failingScanner struct {
	ScanFn func(ctx context.Context, req *scanner.Request) (*scanner.Result, error)
}

func (s failingScanner) Scan(ctx context.Context, req *scanner.Request) (*scanner.Result, error) {
	return s.ScanFn(ctx, req)
}

// A scanner that fails must not let the request through: fail closed.
func TestScannerErrorRefusesAndIsTimed(t *testing.T) {
	w := newWorld(t)
	var scans atomic.Int64
	w.gw.Scanner = failingScanner{ScanFn: func(context.Context, *scanner.Request) (*scanner.Result, error) {
		return nil, errors.New("scan deadline exceeded")
	}}
	w.gw.OnScan = func(time.Duration) { scans.Add(1) }
	resp, err := w.acme().Post(w.url("api.example.test", "/v1/upload"), "text/plain", strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Sluice-Reason") != "scan-failed" {
		t.Fatalf("failed scan: %d %q, want 503 scan-failed", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	if n := len(w.up.requests()); n != 0 {
		t.Fatalf("upstream received %d unscanned requests", n)
	}
	if scans.Load() != 1 {
		t.Fatalf("OnScan called %d times, want 1", scans.Load())
	}
}

// A well-formed WebSocket key is a random nonce, not a leak; a token put in
// that header instead is still found.
func TestWebSocketKeyIsNotAFinding(t *testing.T) {
	w := newWorld(t)
	w.gw.Scanner = &scanner.Scanner{Key: []byte("0123456789abcdef0123456789abcdef")}
	send := func(key string) int {
		req, _ := http.NewRequest("GET", w.url("api.example.test", "/v1/ws"), nil)
		req.Header.Set("Sec-WebSocket-Key", key)
		resp, err := w.acme().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	nonce := make([]byte, 16)
	rand.Read(nonce)
	before := len(w.sink.reasons())
	if code := send(base64.StdEncoding.EncodeToString(nonce)); code != 200 {
		t.Fatalf("request with a WebSocket key: %d", code)
	}
	if got := w.sink.reasons()[before:]; len(got) != 0 {
		t.Fatalf("a WebSocket nonce was reported: %q", got)
	}
	fake, err := scanner.FakeSecret("github-pat")
	if err != nil {
		t.Fatal(err)
	}
	if code := send(fake); code != 403 {
		t.Fatalf("a token in the WebSocket key header passed: %d", code)
	}
}

// Bodies are held in memory while scanned: with ScanMemory taken by one
// upload in progress, the next waits, and is refused when no room comes.
func TestScanMemoryIsBounded(t *testing.T) {
	w := newWorld(t)
	entered, unblock := make(chan struct{}, 2), make(chan struct{})
	w.gw.Scanner = failingScanner{ScanFn: func(ctx context.Context, req *scanner.Request) (*scanner.Result, error) {
		entered <- struct{}{}
		<-unblock
		return &scanner.Result{Body: req.Body, BodyLen: -1}, nil
	}}
	w.gw.ScanMemory = 1 << 20
	w.gw.ScanWait = 300 * time.Millisecond
	post := func(n int) (*http.Response, error) {
		return w.acme().Post(w.url("api.example.test", "/v1/upload"), "text/plain", strings.NewReader(strings.Repeat("x", n)))
	}
	first := make(chan error, 1)
	go func() {
		resp, err := post(900 << 10)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				err = fmt.Errorf("first upload: %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
			}
		}
		first <- err
	}()
	<-entered // the first upload holds 900 KiB of the 1 MiB
	resp, err := post(200 << 10)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Sluice-Reason") != "scan-busy" {
		t.Fatalf("second upload while memory is taken: %d %q, want 503 scan-busy", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	close(unblock)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// Room again: the same upload passes now.
	resp, err = post(200 << 10)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("upload after the first finished: %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
}

// The scanner reads a body into a pooled buffer, which goes back for the
// next request once the body was forwarded. Many distinct bodies at once,
// over HTTP/1.1 and as HTTP/2 streams of two tenants, each reach the
// upstream byte for byte: none is sent from a buffer another request's scan
// took, whole or in part.
func TestScannedBodiesStayTheirOwn(t *testing.T) {
	w := newWorld(t)
	w.gw.Scanner = &scanner.Scanner{Key: []byte("0123456789abcdef0123456789abcdef")}
	h1 := func(tenant string) *http.Client {
		c := w.client(tenant, w.tokens[tenant], w.tenantRoots(tenant))
		c.Transport.(*http.Transport).ForceAttemptHTTP2 = false
		return c
	}
	h2 := func(tenant string) *http.Client { return w.client(tenant, w.tokens[tenant], w.tenantRoots(tenant)) }
	clients := []*http.Client{h1("acme"), h2("acme"), h1("globex"), h2("globex")}
	var wg sync.WaitGroup
	for c := range 8 {
		client := clients[c%len(clients)]
		wg.Go(func() {
			for i := range 6 {
				// 140 to 145 kB: one size class of the pool, whose buffers
				// the requests take from each other.
				line := fmt.Sprintf("client %d request %d: the quick brown fox jumps over the lazy dog\n", c, i)
				body := strings.Repeat(line, (140_000+(c*6+i)*100)/len(line))
				resp, err := client.Post(w.url("other.example.test", "/sum"), "text/plain", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf("%d %x", len(body), sha256.Sum256([]byte(body))); resp.StatusCode != 200 || string(got) != want {
					t.Errorf("client %d request %d (%s): upstream got %d %q, want %q", c, i, resp.Proto, resp.StatusCode, got, want)
				}
			}
		})
	}
	wg.Wait()
}
