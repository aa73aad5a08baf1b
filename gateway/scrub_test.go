package gateway_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/phantom"
)

// echoUpstream echoes what it got (the Authorization header above all) in
// every way an upstream can hand it back: body, header, trailer, a TRACE
// reflection, an encoding the client asked for, an encoding it forces, and
// WebSocket frames (split inside the secret, and a Close reason).
type echoUpstream struct {
	mu   sync.Mutex
	seen []*http.Request
}

func (e *echoUpstream) last() *http.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.seen) == 0 {
		return nil
	}
	return e.seen[len(e.seen)-1]
}

func (e *echoUpstream) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.seen = append(e.seen, r.Clone(r.Context()))
	e.mu.Unlock()
	auth := r.Header.Get("Authorization")
	_, payload, _ := strings.Cut(auth, " ")
	echo := "auth=" + auth + " payload=" + payload
	switch {
	case strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
		conn, brw, err := http.NewResponseController(rw).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Echo: %s\r\n\r\n", payload)
		half := len(echo) / 2
		writeFrame(brw, false, 0x1, []byte(echo[:half]), false)
		writeFrame(brw, true, 0x0, []byte(echo[half:]), false)
		writeFrame(brw, true, 0x9, []byte(payload), false) // a ping
		writeFrame(brw, true, 0x8, append([]byte{0x03, 0xe8}, payload...), false)
		brw.Flush()
		return
	case r.Method == "TRACE":
		rw.Header().Set("Content-Type", "message/http")
		r.Write(rw)
		return
	case r.URL.Path == "/force-br":
		rw.Header().Set("Content-Encoding", "br")
		fmt.Fprint(rw, echo) // "compressed": the client's decoder would find it all the same
		return
	case r.URL.Path == "/stacked":
		rw.Header()["Content-Encoding"] = []string{"gzip", "br"}
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(echo))
		zw.Close()
		rw.Write(b.Bytes())
		return
	case r.URL.Path == "/trailer":
		rw.Header().Set("Trailer", "X-Echo")
		fmt.Fprint(rw, "see trailer")
		rw.Header().Set("X-Echo", payload)
		return
	}
	rw.Header().Set("X-Echo", payload)
	ae := r.Header.Get("Accept-Encoding")
	switch {
	case strings.Contains(ae, "br"):
		rw.Header().Set("Content-Encoding", "br")
		fmt.Fprint(rw, echo)
	case strings.Contains(ae, "gzip"):
		rw.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(rw)
		fmt.Fprint(zw, echo)
		zw.Close()
	default:
		fmt.Fprint(rw, echo)
	}
}

// TestRealSecretNeverComesBack: with a Basic credential, the wire carries
// base64(user:real); no way an upstream can echo it brings the real secret,
// in any spelling the gateway produced, back to the sandbox.
func TestRealSecretNeverComesBack(t *testing.T) {
	up := &echoUpstream{}
	cred := &phantom.Credential{Name: "git", Placement: phantom.Basic, User: "x-access-token", Format: "github-pat"}
	w := newEchoWorld(t, up, cred, "github-pat")
	realPair := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + w.real))
	sent := "Basic " + base64.StdEncoding.EncodeToString([]byte("git:"+w.phantom))
	leaks := func(s string) bool {
		return strings.Contains(s, w.real) || strings.Contains(s, strings.TrimRight(realPair, "="))
	}
	check := func(t *testing.T, resp *http.Response, body string) {
		t.Helper()
		for _, h := range []http.Header{resp.Header, resp.Trailer} {
			for k, vs := range h {
				if leaks(strings.Join(vs, " ")) {
					t.Errorf("the real secret came back in %s", k)
				}
			}
		}
		if leaks(body) {
			t.Errorf("the real secret came back in the body")
		}
	}
	request := func(method, path, ae string) *http.Request {
		req, _ := http.NewRequest(method, w.url("api.example.test", path), nil)
		req.Header.Set("Authorization", sent)
		if ae != "" {
			req.Header.Set("Accept-Encoding", ae)
		}
		return req
	}

	t.Run("identity echo comes back as the client sent it", func(t *testing.T) {
		resp, body := w.do(t, request("GET", "/x", ""))
		if got := up.last().Header.Get("Authorization"); got != "Basic "+realPair {
			t.Fatalf("the upstream did not get the real pair (got the phantom: %v)", got == sent)
		}
		check(t, resp, body)
		if !strings.Contains(body, "auth="+sent) || resp.Header.Get("X-Echo") != strings.TrimPrefix(sent, "Basic ") {
			t.Errorf("the echo was not swapped back to what the client sent: %q", body)
		}
	})
	t.Run("the client's encodings are narrowed to what the scrub reads", func(t *testing.T) {
		resp, body := w.do(t, request("GET", "/x", "br, zstd, deflate, gzip"))
		if ae := up.last().Header.Get("Accept-Encoding"); ae != "gzip" {
			t.Errorf("upstream was offered %q", ae)
		}
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			b.ReadFrom(zr)
			body = b.String()
		}
		check(t, resp, body)
		resp, body = w.do(t, request("GET", "/x", "br"))
		if ae := up.last().Header.Get("Accept-Encoding"); ae != "identity" {
			t.Errorf("upstream was offered %q for a client that wants only br", ae)
		}
		check(t, resp, body)
	})
	for _, path := range []string{"/force-br", "/stacked"} {
		t.Run("unreadable encoding fails closed "+path, func(t *testing.T) {
			resp, body := w.do(t, request("GET", path, ""))
			check(t, resp, body)
			if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Sluice-Reason") != gateway.ReasonResponseUnscrubbable {
				t.Errorf("%d %q, want 502 %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"), gateway.ReasonResponseUnscrubbable)
			}
		})
	}
	t.Run("trailers", func(t *testing.T) {
		resp, body := w.do(t, request("GET", "/trailer", ""))
		check(t, resp, body)
	})
	t.Run("TRACE is refused towards a bound host", func(t *testing.T) {
		n := len(up.seen)
		resp, body := w.do(t, request("TRACE", "/x", ""))
		check(t, resp, body)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("TRACE: %d", resp.StatusCode)
		}
		if len(up.seen) != n {
			t.Error("TRACE reached the upstream")
		}
	})
	t.Run("Range is not forwarded to a bound host", func(t *testing.T) {
		req := request("GET", "/x", "")
		req.Header.Set("Range", "bytes=30-40")
		resp, body := w.do(t, req)
		check(t, resp, body)
		if up.last().Header.Get("Range") != "" {
			t.Error("a Range request reached a bound host: the echo could come back in pieces")
		}
	})
	t.Run("WebSocket frames", func(t *testing.T) {
		tc, br := w.rawTunnel(t, "api.example.test")
		fmt.Fprintf(tc, "GET /ws HTTP/1.1\r\nHost: api.example.test:%d\r\nAuthorization: %s\r\nUpgrade: websocket\r\n"+
			"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", w.port, sent)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade: %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
		}
		check(t, resp, "")
		var msg []byte
		for {
			f, err := readFrame(br)
			if err != nil {
				break
			}
			if leaks(string(f.payload)) {
				t.Errorf("frame with opcode %d carries the real secret", f.op)
			}
			if f.op < 0x8 {
				msg = append(msg, f.payload...)
			}
			if f.op == 0x8 {
				break
			}
		}
		if leaks(string(msg)) || !strings.Contains(string(msg), sent) {
			t.Errorf("message of %d bytes: not swapped back to what the client sent", len(msg))
		}
	})
}
