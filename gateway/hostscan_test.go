package gateway_test

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/scanner"
)

// A host name under an allowed "*." entry that carries data is refused
// before anything resolves or dials it, and the incident holds the name
// with its data masked; ordinary names under the same entry pass, and
// exact entries are not scanned.
func TestHostLabelExfiltrationIsRefusedBeforeTheDial(t *testing.T) {
	w := newWorld(t)
	w.gw.Scanner = &scanner.Scanner{Key: []byte("0123456789abcdef0123456789abcdef")}
	port := strconv.Itoa(w.up.port)
	secret := "db_password=" + randomToken(t)[:16]
	hexLabel := hex.EncodeToString([]byte(secret))[:40]
	b64Label := base64.RawURLEncoding.EncodeToString([]byte(secret))
	refused := map[string]string{
		"hex label":      hexLabel + ".wild.example.test",
		"base64url":      b64Label + ".wild.example.test",
		"many labels":    "a1.b2.c3.d4.e5.f6.wild.example.test",
		"chunked secret": "ghp-" + hex.EncodeToString([]byte(randomToken(t)[:3])) + ".x.wild.example.test", // letters and digits only: a valid name
	}
	for name, host := range refused {
		t.Run("CONNECT/"+name, func(t *testing.T) {
			drain(w.dialed)
			before := len(w.sink.reasons())
			c, resp := w.connect("acme", w.tokens["acme"], host+":"+port)
			if c != nil {
				c.Close()
				t.Fatalf("CONNECT %s was opened", name)
			}
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Sluice-Reason") != "exfil-hostname" || resp.Header.Get("Sluice-Incident") == "" {
				t.Fatalf("got %d %q incident=%q, want 403 exfil-hostname with an incident", resp.StatusCode, resp.Header.Get("Sluice-Reason"), resp.Header.Get("Sluice-Incident"))
			}
			if a := drain(w.dialed); len(a) != 0 {
				t.Fatalf("the gateway dialled %v for a refused name", a)
			}
			evs := w.sink.snapshot()[before:]
			if len(evs) == 0 {
				t.Fatal("no event recorded")
			}
			for _, e := range evs {
				if strings.Contains(e.Host, strings.Split(host, ".")[0]) || strings.Contains(e.Snippet, strings.Split(host, ".")[0]) {
					t.Fatalf("the event holds the data-bearing label: host %q snippet %q", e.Host, e.Snippet)
				}
			}
		})
	}
	t.Run("plain request", func(t *testing.T) {
		drain(w.dialed)
		c, err := net.Dial("tcp", w.proxyAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		auth := base64.StdEncoding.EncodeToString([]byte("acme:" + w.tokens["acme"]))
		host := hexLabel + ".wild.example.test:" + port
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", host, host, auth)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Sluice-Reason") != "exfil-hostname" {
			t.Fatalf("got %d %q, want 403 exfil-hostname", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
		}
		if a := drain(w.dialed); len(a) != 0 {
			t.Fatalf("the gateway dialled %v for a refused name", a)
		}
	})
	for _, host := range []string{"deep.sub.wild.example.test", "api.example.test"} {
		t.Run("passes/"+host, func(t *testing.T) {
			c, resp := w.connect("acme", w.tokens["acme"], host+":"+port)
			if c == nil {
				t.Fatalf("CONNECT %s: %d %q", host, resp.StatusCode, resp.Header.Get("Sluice-Reason"))
			}
			c.Close()
		})
	}
}

// drain empties the dial log.
func drain(ch chan string) []string {
	var out []string
	for {
		select {
		case a := <-ch:
			out = append(out, a)
		default:
			return out
		}
	}
}
