package scanner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// arrivingBody yields b in reads of up to 16 KiB (a TLS record's worth),
// as a body coming over the network does. Before the byte at hold it
// waits until wait reports true (or gives up after 10 s, and fails).
type arrivingBody struct {
	b      []byte
	off    int
	hold   int
	wait   func() bool
	waited bool
	gaveUp bool
	r      *rand.Rand
}

func (a *arrivingBody) Read(p []byte) (int, error) {
	if a.off == len(a.b) {
		return 0, io.EOF
	}
	if a.wait != nil && a.off >= a.hold && !a.waited {
		a.waited = true
		deadline := time.Now().Add(10 * time.Second)
		for !a.wait() {
			if time.Now().After(deadline) {
				a.gaveUp = true
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	n := 1 + a.r.IntN(16<<10)
	if a.wait != nil && a.off < a.hold {
		n = min(n, a.hold-a.off)
	}
	n = copy(p[:min(len(p), n)], a.b[a.off:])
	a.off += n
	return n, nil
}

func jsonRequest(body io.Reader) *Request {
	return &Request{Tenant: "t", Host: "api.example.test", URL: chatURL,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: body,
		Allowed: func(h string) bool { return h == "api.example.test" }}
}

// findingsView is what a finding tells its reader.
func findingsView(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s|%s|%s|%s|%v|%s", f.Rule, f.Where, f.Decoding, f.Fingerprint, f.Action, f.Snippet))
	}
	return out
}

// withToken puts tok into the string of body's message nearest to byte at.
func withToken(body []byte, at int, tok string) []byte {
	i := bytes.Index(body[at:], []byte(`"content":"`)) + at + len(`"content":"`)
	return bytes.Join([][]byte{body[:i], []byte("see " + tok + " there. "), body[i:]}, nil)
}

// TestPipelineInspectsWhileTheBodyArrives: the groups of a JSON body that
// has come in part are inspected before the rest arrives, and the scan
// finds what a scan of the body read first finds.
func TestPipelineInspectsWhileTheBodyArrives(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the pipeline's workers run on the cores the scan leaves: needs two")
	}
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	body := withToken(chatBody(1<<20), 300<<10, tok)
	before := s.earlyJobs.Load()
	arriving := &arrivingBody{b: body, hold: len(body) / 2, r: rand.New(rand.NewPCG(1, 1)),
		wait: func() bool { return s.earlyJobs.Load() > before }}
	res, err := s.Scan(context.Background(), jsonRequest(arriving))
	if err != nil {
		t.Fatal(err)
	}
	if arriving.gaveUp {
		t.Fatal("no group was inspected while half the body had still to come")
	}
	whole := testScanner(t)
	whole.Key, whole.wholeBodies = s.Key, true
	want, err := whole.Scan(context.Background(), jsonRequest(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Block || !reflect.DeepEqual(findingsView(res.Findings), findingsView(want.Findings)) {
		t.Fatalf("pipelined %v %v\nwhole %v %v", res.Verdict, findingsView(res.Findings), want.Verdict, findingsView(want.Findings))
	}
	got, _ := io.ReadAll(res.Body)
	if !bytes.Equal(got, body) {
		t.Fatalf("forwarded %d bytes, not the %d read", len(got), len(body))
	}
}

// TestPipelineFindsWhatTheWholeBodyShows: over bodies of every kind the
// bench has, with secrets at random places and reads of random sizes, the
// pipelined scan and the scan of the body read first give the same
// findings in the same order, and forward the same bytes. Bodies that are
// not one JSON value (a stream of values, a truncated one, one over the
// size limit) go the old way and are found all the same.
func TestPipelineFindsWhatTheWholeBodyShows(t *testing.T) {
	s := testScanner(t)
	whole := testScanner(t)
	whole.Key, whole.wholeBodies = s.Key, true
	for _, sc := range []*Scanner{s, whole} {
		sc.MaxBodyBytes = 5 << 20 / 4
		sc.Policy.ForwardOversize = true
	}
	toks := []string{MustFake(t, "github-pat"), MustFake(t, "aws-access-token"), MustFake(t, "slack-bot-token")}
	r := rand.New(rand.NewPCG(3, 4))
	bodies := map[string][]byte{"chat": chatBody(1 << 20), "code": codeChat(512 << 10), "small": chatBody(4 << 10), "pieces": piecesBody(1 << 20)}
	for name, b := range benchBodies() {
		if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			bodies["bench-"+name] = b
		}
	}
	for name, plain := range bodies {
		body := plain
		for _, tok := range toks {
			if len(body) > 64 {
				body = withToken(body, r.IntN(len(body)/2), tok)
			}
		}
		cases := map[string][]byte{
			"":           body,
			" stream":    append(append(append([]byte{}, body...), ' '), `{"x":"`+toks[0]+`"}`...),
			" truncated": body[:len(body)*3/4],
			" oversize":  append(append([]byte{}, body...), bytes.Repeat([]byte(" "), max(0, 5<<20/4+1-len(body)))...),
		}
		for variant, b := range cases {
			t.Run(name+variant, func(t *testing.T) {
				arriving := &arrivingBody{b: b, r: rand.New(rand.NewPCG(uint64(len(b)), 9))}
				res, err := s.Scan(context.Background(), jsonRequest(arriving))
				if err != nil {
					t.Fatal(err)
				}
				want, err := whole.Scan(context.Background(), jsonRequest(bytes.NewReader(b)))
				if err != nil {
					t.Fatal(err)
				}
				if res.Verdict != want.Verdict || !reflect.DeepEqual(findingsView(res.Findings), findingsView(want.Findings)) {
					t.Fatalf("pipelined %v %q\nwhole %v %q", res.Verdict, findingsView(res.Findings), want.Verdict, findingsView(want.Findings))
				}
				if len(res.Findings) == 0 {
					t.Fatal("no finding: the tokens were not found")
				}
				got, _ := io.ReadAll(res.Body)
				if !bytes.Equal(got, b) {
					t.Fatalf("forwarded %d bytes, not the %d sent", len(got), len(b))
				}
			})
		}
	}
}

// TestPipelineReadError: a body that breaks off fails the scan, and the
// pipeline's workers are gone when it returns: the goroutines are back to
// what they were, and the scanner counts none inspecting.
func TestPipelineReadError(t *testing.T) {
	s := testScanner(t)
	broken := errors.New("connection reset")
	body := chatBody(512 << 10)
	before := runtime.NumGoroutine()
	_, err := s.Scan(context.Background(), jsonRequest(io.MultiReader(bytes.NewReader(body[:400<<10]), iotest.ErrReader(broken))))
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), "read body") {
		t.Fatalf("err %v, want the read's, saying the body could not be read", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before || s.running.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines (%d before the scan), %d inspecting, after the scan failed", runtime.NumGoroutine(), before, s.running.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// pacedBody yields b in 16 KiB reads at rate bytes a second (about what
// the gateway reads a 1 MiB upload from the sandbox at on loopback).
type pacedBody struct {
	b     []byte
	off   int
	rate  float64
	start time.Time
}

func (p *pacedBody) Read(buf []byte) (int, error) {
	if p.off == len(p.b) {
		return 0, io.EOF
	}
	if p.start.IsZero() {
		p.start = time.Now()
	}
	due := p.start.Add(time.Duration(float64(p.off) / p.rate * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		time.Sleep(d)
	}
	n := copy(buf[:min(len(buf), 16<<10)], p.b[p.off:])
	p.off += n
	return n, nil
}

// BenchmarkScanChatArriving scans BenchmarkScanChatNew's upload (every
// message new) as it arrives at arrivalRate (500 MB/s): read whole and then inspected,
// or inspected while it is read (the pipeline). ns/op is the time from
// the first byte to the verdict.
func BenchmarkScanChatArriving(b *testing.B) {
	for _, whole := range []bool{true, false} {
		b.Run(map[bool]string{true: "whole", false: "pipelined"}[whole], func(b *testing.B) {
			s := chatScanner(b)
			s.wholeBodies = whole
			body := chatBody(1 << 20)
			starts := messageStarts(body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu := cpuTime()
			n := 0
			for b.Loop() {
				n++
				stamp := fmt.Sprintf("%06d", n)
				for _, at := range starts {
					copy(body[at:at+len(stamp)], stamp)
				}
				res, err := s.Scan(context.Background(), &Request{Tenant: "t", Host: "api.example.test", URL: chatURL,
					Header:  http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer abc"}},
					Body:    &pacedBody{b: body, rate: arrivalRate},
					Allowed: func(h string) bool { return h == "api.example.test" }})
				if err != nil || res.Verdict != Pass {
					b.Fatal(err, fmt.Sprint(res.Findings))
				}
				res.Release()
			}
			reportCPU(b, cpuTime()-cpu, len(body))
		})
	}
}

// arrivalRate is BenchmarkScanChatArriving's pace, in bytes a second.
var arrivalRate = 500e6

// TestPipelineTimeoutFailsClosed: a body that arrives past the scan's
// deadline fails the scan; the jobs left for after it are never taken as
// inspected.
func TestPipelineTimeoutFailsClosed(t *testing.T) {
	s := testScanner(t)
	s.Timeout = 100 * time.Millisecond
	body := chatBody(1 << 20)
	start := time.Now()
	arriving := &arrivingBody{b: body, hold: len(body) / 2, r: rand.New(rand.NewPCG(5, 5)),
		wait: func() bool { return time.Since(start) > 300*time.Millisecond }}
	res, err := s.Scan(context.Background(), jsonRequest(arriving))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v (verdict %v), want ErrTimeout", err, res != nil && res.Verdict == Pass)
	}
}

// brokenCanaries panics when asked about a token, as a store that broke
// might.
type brokenCanaries struct{}

func (brokenCanaries) Canary(string) (string, bool) { panic("canary store broke") }
func (brokenCanaries) Lengths() map[int]bool        { return map[int]bool{5: true} }

// TestPipelinePanicReachesTheScan: a panic in a pipeline worker is raised
// in the goroutine that called Scan (where the gateway recovers it and
// refuses), never swallowed into a verdict, and the workers are gone.
func TestPipelinePanicReachesTheScan(t *testing.T) {
	s := testScanner(t)
	s.Canaries = brokenCanaries{}
	before := runtime.NumGoroutine()
	var got any
	func() {
		defer func() { got = recover() }()
		res, err := s.Scan(context.Background(), jsonRequest(bytes.NewReader(chatBody(1<<20))))
		t.Errorf("Scan returned (%v, %v) instead of panicking", res != nil, err)
	}()
	if got != "canary store broke" {
		t.Fatalf("recovered %v, want the worker's panic", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines (%d before the scan) after the panic", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

// A body that is JSON but not sent as such is parsed whole and its
// segments split into jobs of one array: what each job joins must stay
// its own (a job that appended its joined pieces in place overwrote the
// next job's first segments), and the spread inspection finds what one
// core's does.
func TestSpreadJobsKeepTheirSegments(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	r := rand.New(rand.NewPCG(5, 6))
	body := piecesBody(1 << 20)
	for range 8 {
		body = withToken(body, r.IntN(len(body)-64), tok)
	}
	scan := func(procs int) *Result {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		res, err := s.Scan(context.Background(), &Request{Tenant: "t", Host: "api.example.test", URL: chatURL,
			Header: http.Header{"Content-Type": {"text/plain"}}, Body: bytes.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	want := scan(1)
	if len(want.Findings) == 0 {
		t.Fatal("no finding on one core: the tokens were not found")
	}
	if !spreads(0, len(body)/2, pipeJobBytes(s.maxBody())) {
		t.Fatal("the body is too short to be spread over the cores")
	}
	for range 3 {
		if got := scan(4); got.Verdict != want.Verdict || !reflect.DeepEqual(findingsView(got.Findings), findingsView(want.Findings)) {
			t.Fatalf("spread %v %q\none core %v %q", got.Verdict, findingsView(got.Findings), want.Verdict, findingsView(want.Findings))
		}
	}
}

// piecesBody is JSON of about n bytes whose every object has pieces that
// are joined (jsonjoin.go): an array of short strings and token-like
// members, so that every job of a pipeline joins some.
func piecesBody(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"tags":["go","rust","js","py","lua","perl"],"a":"abcd%04d","b":"efgh%04d","content":"item %d of the list, with a few words of prose"}`, i, i, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}
