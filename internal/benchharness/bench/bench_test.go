package bench

import (
	"flag"
	"strings"
	"testing"
)

func mustStart(t testing.TB) *Env {
	t.Helper()
	e, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

// TestCheck runs every request kind once via both paths, as the harness does first.
func TestCheck(t *testing.T) {
	e := mustStart(t)
	if err := Check(e); err != nil {
		t.Fatal(err)
	}
}

// TestCheckPeerRefusesTheOtherPath shows that the check tells the paths apart: a direct
// answer does not pass for one through the gateway, nor the reverse.
func TestCheckPeerRefusesTheOtherPath(t *testing.T) {
	e := mustStart(t)
	for _, tc := range []struct {
		name      string
		sent, say Via
	}{
		{"direct answer claimed as gateway", Direct, Gateway},
		{"gateway answer claimed as direct", Gateway, Direct},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.Client(tc.sent, false)
			host := e.ColdHost()
			resp, err := c.Get(e.URL(host, pathSmall))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if err := checkPeer(resp, tc.sent, e, host); err != nil {
				t.Fatalf("true path refused: %v", err)
			}
			if err := checkPeer(resp, tc.say, e, host); err == nil {
				t.Fatal("answer accepted as coming the other way")
			}
		})
	}
}

// TestGatewayRefusesOutsideThePolicy: the bench policy opens only names under Domain.
func TestGatewayRefusesOutsideThePolicy(t *testing.T) {
	e := mustStart(t)
	_, err := e.Client(Gateway, false).Get("https://other.example.test:443/")
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("got %v, want the CONNECT refused with 403", err)
	}
}

// TestDirectClientDialsOnlyTheDomain: the direct client must not reach anything else.
func TestDirectClientDialsOnlyTheDomain(t *testing.T) {
	e := mustStart(t)
	if _, err := e.Client(Direct, false).Get("https://other.example.test/"); err == nil {
		t.Fatal("direct client reached a host outside the domain")
	}
}

// TestCases runs each case three iterations via both paths.
func TestCases(t *testing.T) {
	e := mustStart(t)
	// testing.Benchmark reads the iteration target from the -test.benchtime flag.
	old := flag.Lookup("test.benchtime").Value.String()
	if err := flag.Set("test.benchtime", "3x"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { flag.Set("test.benchtime", old) })
	for _, c := range Cases() {
		for _, v := range []Via{Direct, Gateway} {
			t.Run(c.Name+"/"+v.String(), func(t *testing.T) {
				r := testing.Benchmark(func(b *testing.B) { c.Run(b, e, v) })
				if r.N != 3 {
					t.Fatalf("ran %d iterations, want 3; last error: %v", r.N, e.LastError())
				}
			})
		}
	}
}
