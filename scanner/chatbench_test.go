package scanner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// chatBody is a chat-completions request of exactly size bytes of plain
// prose, built like internal/benchharness/bench.ChatBody (copied: importing
// it would make a cycle).
func chatBody(size int) []byte {
	const (
		head = `{"model":"bench-chat-1","temperature":0.2,"max_tokens":1024,"stream":false,"messages":[`
		tail = `]}`
	)
	words := strings.Fields(`the a an of to and in for on with that this it is was be are
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
	r := rand.New(rand.NewPCG(1, 2))
	prose := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			for w := range 6 + r.IntN(14) {
				word := words[r.IntN(len(words))]
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
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	b := bytes.NewBufferString(head)
	add := func(m message) {
		if b.Len() > len(head) {
			b.WriteByte(',')
		}
		j, _ := json.Marshal(m)
		b.Write(j)
	}
	add(message{"system", "You are a helpful assistant. Answer briefly and clearly."})
	const lastFrame = len(`,{"role":"user","content":""}`) + len(tail)
	for i := 0; ; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		text := prose(200 + r.IntN(1800))
		if b.Len()+len(text)+64+lastFrame+128 > size {
			break
		}
		add(message{role, text})
	}
	room := size - b.Len() - lastFrame
	add(message{"user", prose(room)[:room]})
	b.WriteString(tail)
	return b.Bytes()
}

// BenchmarkScanChatJSON scans a 1 MiB chat upload the way the gateway does:
// with canaries, links checked against an allowlist.
func BenchmarkScanChatJSON(b *testing.B) {
	s := chatScanner(b)
	s.CleanCacheEntries = -1 // every byte scanned each time
	benchChat(b, s, chatBody(1<<20), nil)
}

// BenchmarkScanChatNew scans a 1 MiB chat upload whose every message is new,
// with the clean cache on as the gateway runs it (make bench's upload-1MiB):
// each message is looked up, missed, scanned and added.
func BenchmarkScanChatNew(b *testing.B) {
	s := chatScanner(b)
	body := chatBody(1 << 20)
	starts := messageStarts(body)
	benchChat(b, s, body, func(n int) {
		stamp := fmt.Sprintf("%06d", n)
		for _, at := range starts {
			copy(body[at:at+len(stamp)], stamp)
		}
	})
}

// messageStarts is where each message's text begins in a chat body.
func messageStarts(body []byte) []int {
	var starts []int
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(`"content":"`))
		if j < 0 {
			return starts
		}
		i += j + len(`"content":"`)
		starts = append(starts, i)
	}
}

// BenchmarkScanChatTurn scans an agent's next turn as the gateway does: the
// 1 MiB conversation of BenchmarkScanChatJSON, sent before, and one new
// message of 2 KiB, different each time.
func BenchmarkScanChatTurn(b *testing.B) {
	s := chatScanner(b)
	history := chatBody(1 << 20)
	const tail = "]}"
	msg := []byte(`,{"role":"user","content":"turn 0000000000 ` + strings.Repeat("and then the tests ran again on the build machine. ", 40) + `"}`)
	body := append(append(bytes.Clone(history[:len(history)-len(tail)]), msg...), tail...)
	at := len(history) - len(tail) + len(`,{"role":"user","content":"turn `)
	scanChatPass(b, s, body) // the history, first sent
	benchChat(b, s, body, func(n int) { copy(body[at:at+10], fmt.Sprintf("%010d", n)) })
}

// benchChat scans body as a chat upload once an op, after change(n) for the
// nth op (nil: the same body each time), and reports the CPU it took.
func benchChat(b *testing.B, s *Scanner, body []byte, change func(n int)) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := cpuTime()
	defer func() { reportCPU(b, cpuTime()-cpu, len(body)) }()
	n := 0
	for b.Loop() {
		if n++; change != nil {
			change(n)
		}
		scanChatPass(b, s, body)
	}
}

// chatScanner is the gateway's scanner for the chat benchmarks: canaries,
// a long deadline.
func chatScanner(b *testing.B) *Scanner {
	s := testScanner(b)
	s.Canaries = &CanaryStore{Dir: b.TempDir(), Key: s.Key}
	s.Timeout = time.Minute
	return s
}

var chatURL, _ = url.Parse("https://api.example.test/v1/chat/completions")

// scanChatPass scans body as a chat upload to its API host and fails
// unless it passes.
func scanChatPass(b *testing.B, s *Scanner, body []byte) {
	res, err := s.Scan(context.Background(), &Request{Tenant: "t", Host: "api.example.test", URL: chatURL,
		Header:  http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer abc"}},
		Body:    bytes.NewReader(body),
		Allowed: func(h string) bool { return h == "api.example.test" }})
	if err != nil || res.Verdict != Pass {
		b.Fatal(err, fmt.Sprint(res.Findings))
	}
	res.Release() // as the gateway's forward does, reading it to its end
}
