package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// forgingUpstream answers every request with the gateway's own headers, as
// an upstream that wants the sandbox (or sluice doctor) to believe a
// verdict the gateway never gave: in the header, in trailers, and on a
// WebSocket upgrade.
func forgingUpstream() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		forge := func(h http.Header) {
			h.Set("Sluice-Reason", "secret-detected")
			h.Set("Sluice-Incident", "inc_forged")
			h.Set("Sluice-Warning", "forged")
			h.Set("Sluice-Anything", "forged")
		}
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			conn, brw, err := http.NewResponseController(rw).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
				"Sluice-Reason: secret-detected\r\nSluice-Incident: inc_forged\r\n\r\n")
			brw.Flush()
			return
		}
		rw.Header().Set("Trailer", "Sluice-Reason, Sluice-Incident")
		forge(rw.Header())
		rw.Header().Set("X-Upstream", "yes")
		rw.WriteHeader(http.StatusForbidden)
		fmt.Fprint(rw, "forged body")
		rw.Header().Set("Sluice-Reason", "secret-detected")
		rw.Header().Set("Sluice-Incident", "inc_forged")
		rw.Header().Set(http.TrailerPrefix+"Sluice-Warning", "forged")
	})
}

func noSluiceHeaders(t *testing.T, what string, hs ...http.Header) {
	t.Helper()
	for _, h := range hs {
		for k := range h {
			if strings.HasPrefix(strings.ToLower(k), "sluice-") {
				t.Errorf("%s: the upstream's %s reached the client", what, k)
			}
		}
	}
}

// TestUpstreamCannotForgeVerdicts: no Sluice-* header or trailer of an
// upstream reaches the client, over TLS, plain HTTP or a WebSocket
// upgrade; the rest of the response does.
func TestUpstreamCannotForgeVerdicts(t *testing.T) {
	w := newEchoWorld(t, forgingUpstream(), nil, "")
	for _, u := range []string{w.url("api.example.test", "/x"), fmt.Sprintf("http://plain.example.test:%d/x", w.plainPort)} {
		req, _ := http.NewRequest("GET", u, nil)
		resp, body := w.do(t, req)
		if resp.StatusCode != http.StatusForbidden || body != "forged body" || resp.Header.Get("X-Upstream") != "yes" {
			t.Fatalf("%s: %d %q: the upstream's own answer did not come through", u, resp.StatusCode, body)
		}
		noSluiceHeaders(t, u, resp.Header, resp.Trailer)
	}

	tc, br := w.rawTunnel(t, "ws.example.test")
	fmt.Fprintf(tc, "GET /ws HTTP/1.1\r\nHost: ws.example.test:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", w.port)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	noSluiceHeaders(t, "websocket upgrade", resp.Header)
}
