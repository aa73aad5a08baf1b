package gateway

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// FuzzWriteH1Request: whatever names, values and target a request carries
// (an injected credential among them), checkH1Request refuses it or what
// writeH1Request writes is one request that net/http reads back with the
// same method, target, Host and forwarded headers: no byte of a value
// starts a header line or a second request.
func FuzzWriteH1Request(f *testing.F) {
	f.Add("GET", "/v1/x?q=1", "api.example.test", "X-Token", "phantom-or-real", "Accept", "*/*")
	f.Add("HEAD", "/", "api.example.test:8443", "Authorization", "Bearer a\r\nX-Injected: 1", "Te", "trailers")
	f.Add("OPTIONS", "/a b", "api.example.test", "X-A\r\nB", "v", "Connection", "X-A")
	f.Add("GET", "/%0d%0a", "h\r\nX: y", "Cookie", "a=1\nGET / HTTP/1.1", "Keep-Alive", "5")
	f.Add("GET", "/", "h\r\nX-Injected: y", "Accept", "*/*", "X-A", "1")
	f.Fuzz(func(t *testing.T, method, target, host, k1, v1, k2, v2 string) {
		// Origin-form, as inside a tunnel (and as forward writes an
		// absolute-form target of the proxy port).
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(target, "/") && target != "*" || (method != "GET" && method != "HEAD" && method != "OPTIONS") {
			return
		}
		// Keys as net/http's server and Header.Set leave them: canonical
		// where valid, as they are where not.
		k1, k2 = http.CanonicalHeaderKey(k1), http.CanonicalHeaderKey(k2)
		out := &http.Request{Method: method, URL: u, Header: http.Header{}}
		out.Header[k1] = append(out.Header[k1], v1)
		out.Header[k2] = append(out.Header[k2], v2)
		if checkH1Request(out, host) != nil {
			return // refused: nothing is sent
		}
		var buf bytes.Buffer
		if err := writeH1Request(bufio.NewWriter(&buf), out, host); err != nil {
			t.Fatal(err)
		}
		wire := buf.Bytes()
		got, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(wire)))
		if err != nil {
			t.Fatalf("wrote a request net/http cannot read: %q: %v", wire, err)
		}
		if rest := len(wire) - requestLen(wire); rest != 0 {
			t.Fatalf("%d bytes after the request's header: %q", rest, wire)
		}
		if got.Method != method || got.RequestURI != u.RequestURI() || got.Host != host {
			t.Fatalf("read back %s %s Host %q, want %s %s Host %q", got.Method, got.RequestURI, got.Host, method, u.RequestURI(), host)
		}
		named := map[string]bool{}
		for _, v := range out.Header["Connection"] {
			for _, n := range strings.Split(v, ",") {
				named[http.CanonicalHeaderKey(strings.Trim(n, " \t"))] = true
			}
		}
		for k, vv := range out.Header {
			if dropped(k, nil) || named[k] || k == "Te" || (k == "User-Agent" && vv[0] == "") {
				if k != "Te" && len(got.Header[k]) > 0 {
					t.Fatalf("header %q is not to be forwarded, read back %q (wire %q)", k, got.Header[k], wire)
				}
				continue
			}
			if want := strings.Trim(vv[0], " \t"); !slices.Contains(got.Header[k], want) {
				t.Fatalf("header %q: %q was sent, read back %q (wire %q)", k, want, got.Header[k], wire)
			}
		}
		for k := range got.Header {
			if _, ok := out.Header[k]; !ok {
				t.Fatalf("read back a header %q the request did not have (wire %q)", k, wire)
			}
		}
	})
}

// requestLen is the length of the request line and header block of wire.
func requestLen(wire []byte) int {
	if i := bytes.Index(wire, []byte("\r\n\r\n")); i >= 0 {
		return i + 4
	}
	return len(wire)
}

// Only a request that carries no body takes the HTTP/1.1 path, whatever
// protocol the client spoke: a body taken there would never be forwarded.
func TestBodilessH1(t *testing.T) {
	h2Body := struct{ io.ReadCloser }{io.NopCloser(strings.NewReader(""))} // HTTP/2 gives every stream one
	tests := []struct {
		name   string
		method string
		proto  int
		body   io.ReadCloser
		length int64
		ws     bool
		want   bool
	}{
		{"HTTP/1.1 GET", "GET", 1, http.NoBody, 0, false, true},
		{"HTTP/1.1 HEAD without a Body", "HEAD", 1, nil, 0, false, true},
		{"HTTP/1.1 GET with a body", "GET", 1, io.NopCloser(strings.NewReader("x")), 1, false, false},
		{"HTTP/1.1 POST", "POST", 1, http.NoBody, 0, false, false},
		{"HTTP/1.1 WebSocket", "GET", 1, http.NoBody, 0, true, false},
		{"HTTP/2 GET ended by its headers", "GET", 2, h2Body, 0, false, true},
		{"HTTP/2 OPTIONS", "OPTIONS", 2, h2Body, 0, false, true},
		{"HTTP/2 GET with a body of unknown length", "GET", 2, h2Body, -1, false, false},
		{"HTTP/2 GET with a declared body", "GET", 2, h2Body, 5, false, false},
		{"HTTP/2 POST", "POST", 2, h2Body, 0, false, false},
		{"HTTP/3", "GET", 3, http.NoBody, 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{Method: tc.method, ProtoMajor: tc.proto, Body: tc.body, ContentLength: tc.length}
			if got := bodilessH1(r, tc.ws); got != tc.want {
				t.Fatalf("bodilessH1 = %v, want %v", got, tc.want)
			}
		})
	}
}
