package bench

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/scanner"
)

// Case is one measurement, made the same way via either path.
type Case struct {
	// Name is the case's short name, usable as a sub-benchmark name.
	Name string
	// Desc says in a few words what one operation is.
	Desc string
	// Bytes is the body size one operation moves; zero for the request-rate cases.
	Bytes int64
	// Requests is how many requests one operation makes; zero: one.
	Requests int
	// Scan: the case is measured via GatewayScan too.
	Scan bool
	// NoSquid: the case is not measured via Squid (HTTP/2: squid speaks HTTP/1.1 to
	// its clients).
	NoSquid bool
	// Run measures the case via v, one request per b.Loop iteration. Setup (client,
	// a first request that opens the connection or warms the leaf cache) is not timed.
	Run func(b *testing.B, e *Env, v Via)
}

// Cases returns the cases in the order the harness prints them.
func Cases() []Case {
	return []Case{
		{
			Name: "small-get", Desc: "GET of a 3-byte body on a kept-alive connection", Scan: true,
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, true)
				defer c.CloseIdleConnections()
				loop(b, e, v, func() error { return getSmall(c, e.URL(v, Domain, pathSmall)) })
			},
		},
		{
			Name: "small-get-16", Desc: "16 clients, each GETting a 3-byte body in a loop on its own kept-alive connection",
			Scan: true,
			Run: func(b *testing.B, e *Env, v Via) {
				loopClients(b, e, v, 16, func(c *http.Client) error { return getSmall(c, e.URL(v, Domain, pathSmall)) })
			},
		},
		{
			Name: "upload-1MiB", Desc: "POST of 1 MiB of chat-completions JSON (plain-text messages, each unlike any sent before) on a kept-alive connection",
			Bytes: BodySize, Scan: true,
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, true)
				defer c.CloseIdleConnections()
				body := newVariedBody(e.UploadBody)
				n := e.requests.Add(1) << 20 // far from the numbers of earlier runs' requests
				loop(b, e, v, func() error {
					n++
					return upload(c, e.URL(v, Domain, pathUpload), body.next(n))
				})
			},
		},
		{
			Name: "chat-turn-1MiB", Desc: "POST of a 1 MiB conversation sent before and one new 2 KiB message (an agent's next turn) on a kept-alive connection",
			Bytes: int64(TurnSize), Scan: true,
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, true)
				defer c.CloseIdleConnections()
				body := newTurnBody(e.UploadBody)
				n := e.requests.Add(1) << 20
				loop(b, e, v, func() error {
					n++
					return upload(c, e.URL(v, Domain, pathTurn), body.next(n))
				})
			},
		},
		{
			Name: "download-1MiB", Desc: "GET of a 1 MiB body on a kept-alive connection", Bytes: BodySize, Scan: true,
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, true)
				defer c.CloseIdleConnections()
				loop(b, e, v, func() error { return download(c, e.URL(v, Domain, pathDownload)) })
			},
		},
		{
			Name: "h1-16conns", Desc: "16 small GETs at once on 16 kept-alive HTTP/1.1 connections", Scan: true, Requests: 16,
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.client(v, true, false)
				defer c.CloseIdleConnections()
				loop(b, e, v, func() error { return parallel(16, func() error { return getProto(c, e.URL(v, Domain, pathSmall), 1) }) })
			},
		},
		{
			Name: "h2-16streams", Desc: "16 small GETs at once as 16 streams on one HTTP/2 connection", Scan: true, Requests: 16,
			NoSquid: true,
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.client(v, true, true)
				defer c.CloseIdleConnections()
				loop(b, e, v, func() error { return parallel(16, func() error { return getProto(c, e.URL(v, Domain, pathSmall), 2) }) })
			},
		},
		{
			Name: "newconn-warm", Desc: "small GET on a new TLS connection, same host (gateway leaf cached, upstream connection pooled)",
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, false)
				loop(b, e, v, func() error { return getSmall(c, e.URL(v, Domain, pathSmall)) })
			},
		},
		{
			Name: "newconn-resumed", Desc: "small GET on a new TLS connection that resumes the client's session (Node's agents and curl do), same host",
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, false)
				c.Transport.(*http.Transport).TLSClientConfig.ClientSessionCache = tls.NewLRUClientSessionCache(16)
				loop(b, e, v, func() error { return getSmall(c, e.URL(v, Domain, pathSmall)) })
			},
		},
		{
			Name: "newconn-cold", Desc: "small GET on a new TLS connection, new host each time (gateway mints a leaf and dials upstream anew)",
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, false)
				// The first request is not timed; every timed one names a host never seen.
				first := true
				loop(b, e, v, func() error {
					host := Domain
					if !first {
						host = e.ColdHost()
					}
					first = false
					return getSmall(c, e.URL(v, host, pathSmall))
				})
			},
		},
	}
}

// Vias returns the paths c is measured on in e, in the order the harness prints them.
func (e *Env) Vias(c Case) []Via {
	vias := []Via{Direct, Tunnel}
	if e.squid != nil && !c.NoSquid {
		vias = append(vias, Squid)
	}
	vias = append(vias, Gateway)
	if c.Scan {
		vias = append(vias, GatewayScan)
	}
	return vias
}

// Run is what the timed iterations of a case's last run (the ones testing.Benchmark
// reports) took besides their time.
type Run struct {
	// Latencies holds each operation's time, in order.
	Latencies []time.Duration
	// ProxyCPU is the CPU time the proxy's process used meanwhile; -1: not known
	// (direct, or the gateways run in the harness's own process).
	ProxyCPU time.Duration
}

// LastRun returns what the last run of a case measured besides its time.
func (e *Env) LastRun() Run {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

// proxyCPU is the CPU time used so far by the process that proxies v; -1 if none does,
// or if it is this one.
func (e *Env) proxyCPU(v Via) time.Duration {
	pid := e.proxyPID(v)
	if pid == 0 {
		return -1
	}
	d, err := procCPU(pid)
	if err != nil {
		return -1
	}
	return d
}

func (e *Env) proxyPID(v Via) int {
	switch {
	case v == Squid && e.squid != nil:
		return e.squid.pid()
	case v != Direct && v != Squid && e.child != nil:
		return e.child.pid()
	}
	return 0
}

// loop runs op once untimed (opening the connection, warming caches), then once per
// b.Loop iteration, timing each; it stops the benchmark at the first error.
func loop(b *testing.B, e *Env, v Via, op func() error) {
	b.Helper()
	if err := op(); err != nil {
		err = fmt.Errorf("%s: first request: %w", b.Name(), err)
		e.fail(err)
		b.Fatal(err)
	}
	b.ReportAllocs()
	var lat []time.Duration
	cpu := e.proxyCPU(v)
	for b.Loop() {
		t := time.Now()
		err := op()
		lat = append(lat, time.Since(t))
		if err != nil {
			err = fmt.Errorf("%s: %w", b.Name(), err)
			e.fail(err)
			b.Fatal(err)
		}
	}
	e.finishRun(v, cpu, lat)
}

// finishRun keeps what a run measured besides its time: lat, and the proxy's CPU
// time since cpu (its reading when the run began; -1: not measured).
func (e *Env) finishRun(v Via, cpu time.Duration, lat []time.Duration) {
	if cpu >= 0 {
		if after := e.proxyCPU(v); after >= 0 {
			cpu = after - cpu
		}
	}
	e.mu.Lock()
	e.last = Run{Latencies: lat, ProxyCPU: cpu}
	e.mu.Unlock()
}

// loopClients is loop for a steady load: n clients, each on its own connection, make
// requests back to back until b.N are made; every request is one timed operation.
// (testing.B runs n goroutines only when n is a multiple of GOMAXPROCS, as on this
// 2-core rig; otherwise the next multiple.)
func loopClients(b *testing.B, e *Env, v Via, n int, op func(*http.Client) error) {
	b.Helper()
	procs := runtime.GOMAXPROCS(0)
	goroutines := (n + procs - 1) / procs * procs
	clients := make([]*http.Client, goroutines)
	for i := range clients {
		clients[i] = e.Client(v, true)
		defer clients[i].CloseIdleConnections()
		if err := op(clients[i]); err != nil {
			err = fmt.Errorf("%s: first request: %w", b.Name(), err)
			e.fail(err)
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var (
		mu    sync.Mutex
		lat   []time.Duration
		next  atomic.Int32
		first error
	)
	cpu := e.proxyCPU(v)
	b.SetParallelism((n + procs - 1) / procs)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := clients[int(next.Add(1)-1)%len(clients)]
		var mine []time.Duration
		var err error
		for pb.Next() {
			t := time.Now()
			if err = op(c); err != nil {
				break
			}
			mine = append(mine, time.Since(t))
		}
		mu.Lock()
		defer mu.Unlock()
		lat = append(lat, mine...)
		if err != nil && first == nil {
			first = err
		}
	})
	b.StopTimer()
	if first != nil {
		err := fmt.Errorf("%s: %w", b.Name(), first)
		e.fail(err)
		b.Fatal(err)
	}
	e.finishRun(v, cpu, lat)
}

func getSmall(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	return drain(resp, int64(len(smallBody)))
}

// getProto is getSmall, checking that the answer came over HTTP/major.
func getProto(c *http.Client, url string, major int) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	if resp.ProtoMajor != major {
		resp.Body.Close()
		return fmt.Errorf("GET %s: answered over %s, want HTTP/%d", url, resp.Proto, major)
	}
	return drain(resp, int64(len(smallBody)))
}

// parallel runs op n times at once and returns the first error.
func parallel(n int, op func() error) error {
	errs := make(chan error, n)
	for range n {
		go func() { errs <- op() }()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func upload(c *http.Client, url string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	return drain(resp, int64(len(smallBody)))
}

func download(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	return drain(resp, BodySize)
}

// drain reads and closes the body, and checks the status and the body's length.
func drain(resp *http.Response, want int64) error {
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusOK:
		return &statusError{method: resp.Request.Method, url: resp.Request.URL.String(), code: resp.StatusCode,
			status: resp.Status, reason: resp.Header.Get("Sluice-Reason")}
	case err != nil:
		return fmt.Errorf("%s %s: read body: %w", resp.Request.Method, resp.Request.URL, err)
	case n != want:
		return fmt.Errorf("%s %s: body of %d bytes, want %d", resp.Request.Method, resp.Request.URL, n, want)
	}
	return nil
}

// Check makes each kind of request once via each path and verifies that it went the way
// it was meant to: a direct answer carries the upstream's certificate, an answer through
// either gateway the tenant CA's leaf for the very host asked for, a host outside the
// policy is refused by the gateway, and the upload body with a fake secret in it is
// refused (403 secret-detected) by the scanning gateway and only by it. The harness runs
// it before measuring anything.
func Check(e *Env) error {
	var errs []error
	secretBody, err := withFakeSecret(e.UploadBody)
	if err != nil {
		return err
	}
	for _, v := range []Via{Direct, Tunnel, Squid, Gateway, GatewayScan} {
		if v == Squid && e.squid == nil {
			continue
		}
		c := e.Client(v, true)
		errs = append(errs,
			getSmall(c, e.URL(v, Domain, pathSmall)),
			upload(c, e.URL(v, Domain, pathUpload), e.UploadBody),
			download(c, e.URL(v, Domain, pathDownload)),
		)
		err := upload(c, e.URL(v, Domain, pathUpload), secretBody)
		if v == GatewayScan {
			errs = append(errs, refusedAsSecret(err))
		} else if err != nil {
			errs = append(errs, fmt.Errorf("%s: the body with a fake secret did not pass unscanned: %w", v, err))
		}
		host := e.ColdHost()
		resp, err := c.Get(e.URL(v, host, pathSmall))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v, err))
			continue
		}
		errs = append(errs, drain(resp, int64(len(smallBody))))
		errs = append(errs, checkPeer(resp, v, e, host))
		c.CloseIdleConnections()
	}
	// The policy allows only names under Domain: the gateway must refuse another one,
	// and squid, which reaches only the upstream, too.
	for _, v := range []Via{Gateway, Squid} {
		if v == Squid && e.squid == nil {
			continue
		}
		resp, err := e.Client(v, false).Get("https://other.example.test/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				errs = append(errs, fmt.Errorf("%s let a request to other.example.test through: %s", v, resp.Status))
			}
		}
	}
	return errors.Join(errs...)
}

// refusedAsSecret checks that upload's error is the scanning gateway's refusal.
func refusedAsSecret(err error) error {
	var se *statusError
	switch {
	case err == nil:
		return errors.New("gateway+scan forwarded a body carrying a fake secret")
	case !errors.As(err, &se):
		return fmt.Errorf("gateway+scan: body with a fake secret: %w", err)
	case se.code != http.StatusForbidden || se.reason != "secret-detected":
		return fmt.Errorf("gateway+scan: body with a fake secret: status %d, Sluice-Reason %q; want 403 secret-detected", se.code, se.reason)
	}
	return nil
}

// withFakeSecret returns a copy of body, of the same length, in which a freshly generated
// fake GitHub token replaces words inside the last message's text.
func withFakeSecret(body []byte) ([]byte, error) {
	secret, err := scanner.FakeSecret("github-pat")
	if err != nil {
		return nil, fmt.Errorf("bench: fake secret: %w", err)
	}
	out := bytes.Clone(body)
	i := bytes.LastIndex(out, []byte(`"content":"`))
	at := i + len(`"content":"`) + 16
	patch := " my token is " + secret + " "
	if i < 0 || at+len(patch) > len(out)-len(chatTail)-2 {
		return nil, errors.New("bench: upload body too small to carry a secret")
	}
	copy(out[at:], patch)
	return out, nil
}

// statusError is a response other than 200 OK.
type statusError struct {
	method, url string
	code        int
	status      string
	reason      string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: status %s (Sluice-Reason %q)", e.method, e.url, e.status, e.reason)
}

// chatHead and chatTail frame the chat-completions request ChatBody writes.
const (
	chatHead = `{"model":"bench-chat-1","temperature":0.2,"max_tokens":1024,"stream":false,"messages":[`
	chatTail = `]}`
)

// chatWords are what ChatBody's messages are made of: plain prose, no identifiers, no
// long tokens, nothing that needs JSON escaping.
var chatWords = strings.Fields(`the a an of to and in for on with that this it is was be are
	as by from at or not we you they can will would should could please explain how why when
	what which data request response server client function value list table report summary
	page user account order invoice meeting project team review draft email letter plan budget
	week month year today tomorrow morning afternoon customer support ticket issue error fix
	change update release version test build result question answer example section chapter
	paragraph sentence word reader writer story history weather city river garden kitchen
	recipe bread coffee music movie book library school student teacher lesson homework
	travel train station ticket hotel room price cost total number first second third last
	next previous better faster simpler clear short long small large good great new old
	thanks hello sure okay also then because however therefore although`)

// ChatBody returns a chat-completions style JSON request of exactly size bytes (at least
// 512): a system prompt and alternating user and assistant messages of plain English-like
// text, the same bytes on every call. Benign as it is, every byte of it goes through the
// scanner's rules, like a long agent conversation does.
func ChatBody(size int) []byte {
	if size < 512 {
		panic(fmt.Sprintf("bench: ChatBody(%d): want at least 512 bytes", size))
	}
	r := rand.New(rand.NewPCG(1, 2))
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	b := bytes.NewBufferString(chatHead)
	add := func(m message) {
		if b.Len() > len(chatHead) {
			b.WriteByte(',')
		}
		j, err := json.Marshal(m)
		if err != nil {
			panic(err) // a struct of two strings always marshals
		}
		b.Write(j)
	}
	add(message{"system", "You are a helpful assistant. Answer briefly and clearly."})
	// The last message is cut to fit: leave it room for its frame and some text.
	const lastFrame = len(`,{"role":"user","content":""}`) + len(chatTail)
	for i := 0; ; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		text := prose(r, 200+r.IntN(1800))
		if b.Len()+len(text)+64+lastFrame+128 > size {
			break
		}
		add(message{role, text})
	}
	room := size - b.Len() - lastFrame
	add(message{"user", prose(r, room)[:room]})
	b.WriteString(chatTail)
	if b.Len() != size {
		panic(fmt.Sprintf("bench: ChatBody(%d) made %d bytes", size, b.Len()))
	}
	return b.Bytes()
}

// prose returns sentences of chatWords, at least n bytes of them.
func prose(r *rand.Rand, n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		words := 6 + r.IntN(14)
		for w := range words {
			word := chatWords[r.IntN(len(chatWords))]
			if w == 0 {
				word = strings.ToUpper(word[:1]) + word[1:]
			} else {
				sb.WriteByte(' ')
			}
			sb.WriteString(word)
		}
		sb.WriteString(". ")
	}
	return sb.String()
}

// checkPeer verifies whose certificate answered: the upstream's (for *.Domain) directly
// and through the blind tunnel, the tenant CA's leaf for exactly host through the
// gateway, a leaf of squid's CA through squid.
func checkPeer(resp *http.Response, v Via, e *Env, host string) error {
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return fmt.Errorf("%s: no TLS peer certificate", v)
	}
	leaf := resp.TLS.PeerCertificates[0]
	roots := e.upRoots
	switch v {
	case Gateway, GatewayScan:
		roots = e.tenantCAs
		if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != host {
			return fmt.Errorf("gateway: leaf names %v, want exactly %s", leaf.DNSNames, host)
		}
		// What is measured is the key exchange the config asked for.
		want := tls.X25519MLKEM768
		if e.kex == config.KeyExchangeClassical {
			want = tls.X25519
		}
		if resp.TLS.CurveID != want {
			return fmt.Errorf("%s: key exchange %v, want %v (tls.sandbox_key_exchange %q)", v, resp.TLS.CurveID, want, e.kex)
		}
	case Squid:
		roots = e.squid.roots
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
		return fmt.Errorf("%s: peer certificate: %w", v, err)
	}
	return nil
}
