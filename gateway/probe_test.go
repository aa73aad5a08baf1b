package gateway_test

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/sluice-egress/sluice/internal/probetag"
	"github.com/sluice-egress/sluice/rules"
)

// A tagged probe's refusal carries a proof the doctor can check and an upstream
// cannot make; the refusal is still recorded, marked as a probe.
func TestProbeProof(t *testing.T) {
	w := newWorld(t)
	tok := w.tokens["acme"]
	key := probetag.KeyFromToken(tok)
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("acme:"+tok))

	t.Run("CONNECT", func(t *testing.T) {
		nonce := probetag.NewNonce()
		c, err := net.Dial("tcp", w.proxyAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT evil.example.test:443 HTTP/1.1\r\nHost: evil.example.test:443\r\nProxy-Authorization: %s\r\n%s: %s\r\n\r\n",
			auth, probetag.Header, probetag.Value(nonce))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		reason := resp.Header.Get("Sluice-Reason")
		if resp.StatusCode != 403 || reason != rules.ReasonHostNotAllowed {
			t.Fatalf("got %s %q", resp.Status, reason)
		}
		if !probetag.Verify(key, nonce, reason, resp.Header.Get(probetag.ProofHeader)) {
			t.Fatal("the proof does not verify")
		}
		w.sink.mu.Lock()
		last := w.sink.events[len(w.sink.events)-1]
		w.sink.mu.Unlock()
		if last.Host != "evil.example.test" || !last.Probe {
			t.Errorf("the refusal's event %+v is not marked as a probe", last)
		}
	})
	t.Run("plain, and nothing for an untagged request", func(t *testing.T) {
		tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("acme", tok), Host: w.proxyAddr})}
		defer tr.CloseIdleConnections()
		nonce := probetag.NewNonce()
		for _, tagged := range []bool{true, false} {
			req, _ := http.NewRequest(http.MethodGet, "http://169.254.169.254/latest/", nil)
			if tagged {
				req.Header.Set(probetag.Header, probetag.Value(nonce))
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			proof := resp.Header.Get(probetag.ProofHeader)
			if tagged != probetag.Verify(key, nonce, resp.Header.Get("Sluice-Reason"), proof) || (!tagged && proof != "") {
				t.Fatalf("tagged %v: %s, proof %q", tagged, resp.Status, proof)
			}
		}
	})
}
