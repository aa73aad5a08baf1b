package gateway_test

import (
	"crypto/x509"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/sluice-egress/sluice/gateway"
)

// SetRootCAs applies to the next request, also over a tenant whose transport
// (and pooled connection) already exists: a CA taken out of the roots makes the
// upstream fail verification, and putting it back makes it work again. Over
// HTTP/2 the request goes through the transports, over HTTP/1.1 through the
// gateway's own pool (upstream1.go).
func TestSetRootCAs(t *testing.T) {
	for _, h2 := range []bool{true, false} {
		t.Run(map[bool]string{true: "h2", false: "http1.1"}[h2], func(t *testing.T) { testSetRootCAs(t, h2) })
	}
}

func testSetRootCAs(t *testing.T, h2 bool) {
	w := newWorld(t)
	c := w.acme()
	c.Transport.(*http.Transport).ForceAttemptHTTP2 = h2
	get := func() (int, string) {
		t.Helper()
		resp, err := c.Get(w.url("api.example.test", "/v1/x"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Sluice-Reason")
	}
	resp, err := c.Get(w.url("api.example.test", "/v1/x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := map[bool]int{true: 2, false: 1}[h2]; resp.ProtoMajor != want || resp.StatusCode != http.StatusOK {
		t.Fatalf("with the upstream's CA trusted: %d over %s, want 200 over HTTP/%d", resp.StatusCode, resp.Proto, want)
	}

	w.gw.SetRootCAs(x509.NewCertPool()) // trusts nothing
	if code, reason := get(); code != http.StatusBadGateway || reason != gateway.ReasonUpstreamTLS {
		t.Fatalf("after the upstream's CA was removed: %d %q, want 502 %s", code, reason, gateway.ReasonUpstreamTLS)
	}

	roots := x509.NewCertPool()
	roots.AddCert(w.upCA.Cert)
	w.gw.SetRootCAs(roots)
	if code, reason := get(); code != http.StatusOK {
		t.Fatalf("after SetRootCAs with the upstream's CA: %d %s", code, reason)
	}
}

// SetRootCAs while requests are forwarded is race-free (run with -race).
func TestSetRootCAsConcurrent(t *testing.T) {
	w := newWorld(t)
	roots := x509.NewCertPool()
	roots.AddCert(w.upCA.Cert)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c := w.acme()
			for range 5 {
				resp, err := c.Get(w.url("api.example.test", "/v1/x"))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d (%s)", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
				}
			}
		})
	}
	for range 10 {
		w.gw.SetRootCAs(roots)
	}
	wg.Wait()
}
