package gateway

import (
	"context"
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
