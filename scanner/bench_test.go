package scanner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bench bodies, built deterministically so that `make bench` compares the
// scanner and the gitleaks command line on the same bytes.
func benchBodies() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	str := func(alpha string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		return string(b)
	}
	words := strings.Fields("the agent reads the file and writes a patch for the failing test then runs go vet and reports back with a summary of changes")
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[r.IntN(len(words))] + " ")
		}
		return sb.String()
	}
	// JSON: a chat completion request with a long conversation.
	var msgs []map[string]string
	for len(msgs) < 600 {
		msgs = append(msgs, map[string]string{"role": "user", "content": text(1500)})
	}
	chat, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	// Package-manager traffic: a lockfile.
	pk := map[string]any{}
	for i := range 4000 {
		raw := make([]byte, 64)
		for j := range raw {
			raw[j] = byte(r.IntN(256))
		}
		pk[fmt.Sprintf("node_modules/pkg-%d", i)] = map[string]string{"version": "1.2.3",
			"resolved": fmt.Sprintf("https://packages.example.test/pkg-%d/-/pkg-%d-1.2.3.tgz", i, i), "integrity": "sha512-" + base64.StdEncoding.EncodeToString(raw)}
	}
	lock, _ := json.MarshalIndent(map[string]any{"lockfileVersion": 3, "packages": pk}, "", "  ")
	// Dense: config-like text full of keywords and token-shaped values.
	var dense strings.Builder
	for dense.Len() < 1<<20 {
		fmt.Fprintf(&dense, "api_key = %q\ntoken: %s\nsecret=%s\nAuthorization: Bearer %s\n",
			str(base62, 32), str(base62, 40), str(base64Chars, 44), str(base62+"._-", 60))
	}
	return map[string][]byte{"json": chat, "packages": lock, "dense": []byte(dense.String()),
		"code": codeChat(1 << 20), "nokw": noKeywordText(1 << 20)}
}

// codeChat is a chat request of about n bytes whose tool results are real
// source code (Go's net/http, read at run time): keyword-dense (key, token,
// auth, secret) the way an agent's traffic is.
func codeChat(n int) []byte {
	files, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", "net", "http", "*.go"))
	slices.Sort(files)
	var msgs []map[string]string
	size := 0
	for i := 0; size < n && len(files) > 0; i++ {
		b, err := os.ReadFile(files[i%len(files)])
		if err != nil {
			break
		}
		if len(b) > 32<<10 {
			b = b[:32<<10]
		}
		msgs = append(msgs, map[string]string{"role": "user", "content": "Please fix the failing test in " + filepath.Base(files[i%len(files)])},
			map[string]string{"role": "tool", "content": string(b)})
		size += len(b) + 100
	}
	out, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	return out
}

// noKeywordText is prose that holds none of the rules' keywords: the cost
// of the automaton pass alone (and the decoders' checks).
func noKeywordText(n int) []byte {
	rs, err := DefaultRules()
	if err != nil {
		panic(err)
	}
	var words []string
	for _, w := range strings.Fields("a the of to in for on with at by from up about into over after under again then once here there when where why how all any both each few more most other some such no nor not only own same so than too very can will just should now city river garden kitchen bread coffee music movie book library school student teacher lesson travel train station hotel room price total number first second third last next good great new old long small large") {
		hit := false
		rs.eng.kw.each(" "+w+" ", func(int, int) { hit = true })
		if !hit {
			words = append(words, w)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	out := []byte(b.String())
	hits := 0
	rs.eng.kw.each(string(out), func(int, int) { hits++ })
	if hits > 0 {
		panic(fmt.Sprintf("noKeywordText has %d keyword hits", hits))
	}
	return out
}

func BenchmarkScan(b *testing.B) {
	s := testScanner(b)
	s.MaxBodyBytes = 64 << 20
	s.Timeout = 10 * time.Minute
	s.CleanCacheEntries = -1 // every byte scanned each time, as gitleaks does
	bodies := benchBodies()
	for _, name := range []string{"json", "packages", "dense", "code", "nokw"} {
		body := bodies[name]
		ct := "application/json"
		if name == "dense" || name == "nokw" {
			ct = "text/plain"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			cpu := cpuTime()
			for b.Loop() {
				res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {ct}}, Body: bytes.NewReader(body)})
				if err != nil || res == nil {
					b.Fatal(err)
				}
				res.Release() // as the gateway's forward does, reading it to its end
			}
			reportCPU(b, cpuTime()-cpu, len(body))
		})
	}
}

// TestWriteBenchCorpus writes the bench bodies for the gitleaks command
// line when SLUICE_BENCH_CORPUS names a directory (scanner/bench.sh).
func TestWriteBenchCorpus(t *testing.T) {
	dir := os.Getenv("SLUICE_BENCH_CORPUS")
	if dir == "" {
		t.Skip("SLUICE_BENCH_CORPUS not set")
	}
	for name, body := range benchBodies() {
		ext := ".json"
		if name == "dense" || name == "nokw" {
			ext = ".txt"
		}
		if err := os.WriteFile(filepath.Join(dir, name+ext), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cpuTime is the process's user and system time: on a machine shared with
// other work it measures the scan's cost where wall time measures the load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds CPU time per op and the throughput it gives.
func reportCPU(b *testing.B, cpu time.Duration, size int) {
	if cpu <= 0 || b.N == 0 {
		return
	}
	per := float64(cpu.Nanoseconds()) / float64(b.N)
	b.ReportMetric(per, "cpu-ns/op")
	b.ReportMetric(float64(size)/per*1e3, "cpu-MB/s")
}

// BenchmarkScanHeaders is the scan of a request without a body, as every
// kept-alive GET through the gateway pays it: the URL and the header set of
// a package-manager fetch, of a small API call and of a model SDK's call
// (its Idempotency-Key is a generic-api-key match on every request). The
// canaries variant adds a canary store in a directory (its generation file
// read on every scan); the changing variant changes a query value and a
// header on every request, as paging with request ids does (the trail
// records and joins them, trail.go).
func BenchmarkScanHeaders(b *testing.B) {
	sets := map[string]http.Header{
		"package-get": {
			"User-Agent":      {"npm/10.8.2 node/v22.11.0 linux x64 workspaces/false"},
			"Accept":          {"application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"},
			"Accept-Encoding": {"gzip, deflate, br"},
			"Npm-Command":     {"install"},
			"Npm-Session":     {"5f1d8c2a9b3e4f60"},
		},
		"api-get": {
			"User-Agent":      {"Go-http-client/1.1"},
			"Accept":          {"application/json"},
			"Accept-Encoding": {"gzip"},
			"X-Request-Id":    {"6d1f3c0e-8a4b-4f2e-9c7d-2b5a1e0f9d3c"},
		},
		"sdk-headers": {
			"User-Agent": {"Anthropic/JS 0.30.1"}, "X-Stainless-Arch": {"x64"}, "X-Stainless-Lang": {"js"}, "X-Stainless-Os": {"Linux"},
			"X-Stainless-Package-Version": {"0.30.1"}, "X-Stainless-Runtime": {"node"}, "X-Stainless-Runtime-Version": {"v20.20.2"},
			"Accept": {"application/json"}, "Anthropic-Version": {"2023-06-01"}, "X-Stainless-Retry-Count": {"0"},
			"Idempotency-Key": {"stainless-node-retry-3f2b9c1e-8a7d-4e2f-9b1c-0d5e6f7a8b9c"},
		},
	}
	u, _ := url.Parse("https://registry.example.test/v1/packages/left-pad?version=1.3.0")
	for _, canaries := range []bool{false, true} {
		s := testScanner(b)
		name := ""
		if canaries {
			s.Canaries = &CanaryStore{Dir: b.TempDir(), Key: s.Key}
			name = "+canaries"
		}
		for set, h := range sets {
			b.Run(set+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res, err := s.Scan(context.Background(), &Request{Host: u.Hostname(), URL: u, Header: h, Source: "agent/run-1"})
					if err != nil || res == nil || len(res.Findings) != 0 {
						b.Fatalf("scan: %v, %+v", err, res)
					}
				}
			})
		}
	}
	b.Run("api-get+changing", func(b *testing.B) {
		s := testScanner(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			cu := *u
			cu.RawQuery = "version=1.3.0&page=" + strconv.Itoa(i)
			h := http.Header{"User-Agent": {"Go-http-client/1.1"}, "Accept": {"application/json"}, "Accept-Encoding": {"gzip"},
				"X-Request-Id": {strconv.FormatInt(int64(i)*0x9e3779b1, 16) + "-8a4b-4f2e-9c7d"}}
			res, err := s.Scan(context.Background(), &Request{Host: u.Hostname(), URL: &cu, Header: h, Source: "agent/run-1"})
			if err != nil || res == nil || len(res.Findings) != 0 {
				b.Fatalf("scan: %v, %+v", err, res)
			}
		}
	})
}
