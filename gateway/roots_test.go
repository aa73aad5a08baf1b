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
// upstream fail verification, and putting it back makes it work again.
func TestSetRootCAs(t *testing.T) {
	w := newWorld(t)
	c := w.acme()
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
	if code, reason := get(); code != http.StatusOK {
		t.Fatalf("with the upstream's CA trusted: %d %s", code, reason)
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
