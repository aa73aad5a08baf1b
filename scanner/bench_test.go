package scanner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
	return map[string][]byte{"json": chat, "packages": lock, "dense": []byte(dense.String())}
}

func BenchmarkScan(b *testing.B) {
	s := testScanner(b)
	s.MaxBodyBytes = 64 << 20
	s.Timeout = 10 * time.Minute
	for _, name := range []string{"json", "packages", "dense"} {
		body := benchBodies()[name]
		ct := "application/json"
		if name == "dense" {
			ct = "text/plain"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {ct}}, Body: strings.NewReader(string(body))})
				if err != nil || res == nil {
					b.Fatal(err)
				}
			}
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
		if name == "dense" {
			ext = ".txt"
		}
		if err := os.WriteFile(filepath.Join(dir, name+ext), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
