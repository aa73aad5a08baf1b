package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/scanner"
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
		{"gateway+scan answer claimed as direct", GatewayScan, Direct},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.Client(tc.sent, false)
			host := e.ColdHost()
			resp, err := c.Get(e.URL(tc.sent, host, pathSmall))
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
		for _, v := range e.Vias(c) {
			t.Run(c.Name+"/"+v.String(), func(t *testing.T) {
				r := testing.Benchmark(func(b *testing.B) { c.Run(b, e, v) })
				if r.N != 3 {
					t.Fatalf("ran %d iterations, want 3; last error: %v", r.N, e.LastError())
				}
			})
		}
	}
}

// TestChatBody: exact size, valid JSON of the chat-completions shape, deterministic, and
// benign (the shipped rules find nothing), while the copy with a fake secret is caught.
func TestChatBody(t *testing.T) {
	for _, size := range []int{512, 4096, BodySize} {
		body := ChatBody(size)
		if len(body) != size {
			t.Fatalf("ChatBody(%d): %d bytes", size, len(body))
		}
		var req struct {
			Model    string
			Messages []struct{ Role, Content string }
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("ChatBody(%d): %v", size, err)
		}
		if req.Model == "" || len(req.Messages) < 2 || req.Messages[0].Role != "system" {
			t.Fatalf("ChatBody(%d): not a chat request: model %q, %d messages", size, req.Model, len(req.Messages))
		}
		if string(ChatBody(size)) != string(body) {
			t.Fatalf("ChatBody(%d) differs between calls", size)
		}
	}
	var sc scanner.Scanner
	body := ChatBody(64 << 10)
	fs, err := sc.ScanText(context.Background(), "chat", body)
	if err != nil || len(fs) != 0 {
		t.Fatalf("benign body: %d findings (first: %+v), err %v", len(fs), first(fs), err)
	}
	secret, err := withFakeSecret(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) != len(body) || !json.Valid(secret) {
		t.Fatalf("withFakeSecret: %d bytes (want %d), valid JSON %v", len(secret), len(body), json.Valid(secret))
	}
	if fs, err := sc.ScanText(context.Background(), "chat", secret); err != nil || len(fs) == 0 {
		t.Fatalf("body with a fake secret: no finding, err %v", err)
	}
}

func first(fs []scanner.Finding) any {
	if len(fs) == 0 {
		return nil
	}
	return fs[0].Rule
}

// TestRefusedAsSecret: only a 403 secret-detected passes for the scanner's refusal.
func TestRefusedAsSecret(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"forwarded", nil, false},
		{"transport error", errors.New("connection reset"), false},
		{"other refusal", &statusError{code: http.StatusForbidden, reason: "host-not-allowed"}, false},
		{"scan failed", &statusError{code: http.StatusServiceUnavailable, reason: "scan-failed"}, false},
		{"secret detected", &statusError{code: http.StatusForbidden, reason: "secret-detected"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := refusedAsSecret(tc.err); (err == nil) != tc.ok {
				t.Fatalf("refusedAsSecret(%v) = %v, want ok %v", tc.err, err, tc.ok)
			}
		})
	}
}

// TestScanGatewayRefusesSecretOthersForward: the fake secret passes direct and through the
// unscanned gateway, and the scanning gateway refuses it, so the three paths differ as named.
func TestScanGatewayRefusesSecretOthersForward(t *testing.T) {
	e := mustStart(t)
	body, err := withFakeSecret(e.UploadBody)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []Via{Direct, Gateway, GatewayScan} {
		t.Run(v.String(), func(t *testing.T) {
			err := upload(e.Client(v, false), e.URL(v, Domain, pathUpload), body)
			if v == GatewayScan {
				err = refusedAsSecret(err)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// childEnv, when set, makes this test binary the gateways' process (see
// TestGatewaysInTheirOwnProcess); its last argument is the directory.
const childEnv = "SLUICE_BENCH_TEST_CHILD"

func TestHelperServeGateways(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("the gateways' process of TestGatewaysInTheirOwnProcess")
	}
	if err := ServeGateways(flag.Arg(flag.NArg()-1), os.Stdin, os.Stdout, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// The gateways in a process of their own pass the same checks, and their CPU time and
// memory are read from it.
func TestGatewaysInTheirOwnProcess(t *testing.T) {
	t.Setenv(childEnv, "1")
	e, err := StartWith(Options{Child: []string{os.Args[0], "-test.run=^TestHelperServeGateways$"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if e.gw != nil || e.child == nil {
		t.Fatal("the gateways run in the test's process")
	}
	if err := Check(e); err != nil {
		t.Fatal(err)
	}
	old := flag.Lookup("test.benchtime").Value.String()
	flag.Set("test.benchtime", "20x")
	t.Cleanup(func() { flag.Set("test.benchtime", old) })
	for _, v := range []Via{Direct, Tunnel, Gateway} {
		r := testing.Benchmark(func(b *testing.B) { Cases()[0].Run(b, e, v) })
		run := e.LastRun()
		if r.N != 20 || len(run.Latencies) != 20 {
			t.Fatalf("%s: %d iterations, %d latencies; last error %v", v, r.N, len(run.Latencies), e.LastError())
		}
		if (run.ProxyCPU < 0) != (v == Direct) {
			t.Errorf("%s: proxy CPU %v", v, run.ProxyCPU)
		}
	}
	i, err := e.IdleTunnels(Gateway, 20, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if i.Before <= 0 || i.After <= 0 || i.Goroutines < 0.5 {
		t.Fatalf("idle tunnels: %+v", i)
	}
	if _, err := e.IdleTunnels(Direct, 20, time.Second); err == nil {
		t.Fatal("idle direct connections measured as tunnels")
	}
}

// Squid, where installed, passes the checks: its leaf for the host, the upstream
// reached, and nothing outside it.
func TestSquid(t *testing.T) {
	bin, err := exec.LookPath("squid")
	if err != nil {
		t.Skip("squid not installed")
	}
	start := time.Now()
	e, err := StartWith(Options{Squid: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started in %v", time.Since(start))
	t.Cleanup(func() { e.Close() })
	if err := Check(e); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	resp, err := e.Client(Squid, false).Get("https://" + net.JoinHostPort(Domain, "1") + "/")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("squid reached a port other than the upstream's")
		}
	}
	t.Logf("port 1 refused in %v: %v", time.Since(start), cmpErr(resp, err))
}

func cmpErr(resp *http.Response, err error) any {
	if err != nil {
		return err
	}
	return resp.Status
}

func TestProcReadings(t *testing.T) {
	cpu, err := procCPU(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Fatalf("procCPU: %v, %v", cpu, err)
	}
	rss, err := procRSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("procRSS: %d, %v", rss, err)
	}
	if _, err := procCPU(-1); err == nil {
		t.Fatal("procCPU of no process")
	}
}

// TestVariedBodies: the upload case's bodies differ from one request to the next in every
// message and stay valid, benign JSON of the same length; the turn case's body is the
// history and one new message, whose text alone changes.
func TestVariedBodies(t *testing.T) {
	type chat struct {
		Messages []struct{ Role, Content string }
	}
	decode := func(b []byte) chat {
		t.Helper()
		var c chat
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	history := ChatBody(64 << 10)
	v := newVariedBody(history)
	a := decode(bytes.Clone(v.next(1)))
	b := decode(bytes.Clone(v.next(2)))
	if len(a.Messages) != len(decode(history).Messages) || len(v.buf) != len(history) {
		t.Fatal("varied body changed shape")
	}
	for i := range a.Messages {
		if a.Messages[i].Content == b.Messages[i].Content {
			t.Fatalf("message %d is the same in requests 1 and 2", i)
		}
	}
	turn := newTurnBody(history)
	one, two := decode(bytes.Clone(turn.next(1))), decode(bytes.Clone(turn.next(2)))
	h := decode(history)
	if len(one.Messages) != len(h.Messages)+1 || one.Messages[len(h.Messages)-1] != h.Messages[len(h.Messages)-1] {
		t.Fatal("turn body is not the history and one message")
	}
	if last := len(one.Messages) - 1; one.Messages[last].Content == two.Messages[last].Content {
		t.Fatal("the new message is the same in requests 1 and 2")
	}
	var sc scanner.Scanner
	for _, body := range [][]byte{v.next(12345678), turn.next(87654321)} {
		fs, err := sc.ScanText(context.Background(), "chat", body)
		if err != nil || len(fs) != 0 {
			t.Fatalf("tagged body: %d findings (first: %+v), err %v", len(fs), first(fs), err)
		}
	}
}
