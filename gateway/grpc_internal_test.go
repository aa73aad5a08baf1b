package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// grpcMsg frames payload as one gRPC message.
func grpcMsg(flag byte, payload []byte) []byte {
	m := []byte{flag, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(m[1:], uint32(len(payload)))
	return append(m, payload...)
}

func gz(t testing.TB, p []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(p)
	zw.Close()
	return b.Bytes()
}

// passOrBlock is a scanner that blocks any message holding "LEAK".
type passOrBlock struct{ seen *[]string }

func (s passOrBlock) Scan(_ context.Context, req *scanner.Request) (*scanner.Result, error) {
	b, _ := io.ReadAll(req.Body)
	if s.seen != nil {
		*s.seen = append(*s.seen, string(b))
	}
	if bytes.Contains(b, []byte("LEAK")) {
		return &scanner.Result{Verdict: scanner.Block, Reason: scanner.ReasonSecret,
			Findings: []scanner.Finding{{Kind: scanner.KindSecret, Rule: "test", Action: scanner.Block}}}, nil
	}
	return &scanner.Result{}, nil
}

func newTestGRPCBody(body []byte, gzipped bool, max int64, seen *[]string) *grpcBody {
	g := &Gateway{Policy: nopPolicy{}, Scanner: passOrBlock{seen: seen}, Logger: slog.New(slog.DiscardHandler)}
	r := httptest.NewRequest("POST", "/svc/M", nil)
	return &grpcBody{g: g, r: r, host: "grpc.example.test", port: 443, src: io.NopCloser(bytes.NewReader(body)), gzip: gzipped, max: max}
}

type nopPolicy struct{}

func (nopPolicy) Identify(string, string) (rules.Identity, error) { return rules.Identity{}, nil }
func (nopPolicy) Decide(rules.Query) rules.Decision               { return rules.Decision{Action: rules.Allow} }

func TestGRPCBody(t *testing.T) {
	ok1, ok2 := grpcMsg(0, []byte("one")), grpcMsg(0, []byte("two"))
	bomb := gz(t, bytes.Repeat([]byte{0}, 1<<20))
	tests := []struct {
		name    string
		body    []byte
		gzip    bool
		want    string // what is forwarded
		blocked string // the refusal's reason; "" when none
		err     error  // the error after what is forwarded, io.EOF when clean
		scanned []string
	}{
		{name: "messages pass as framed", body: append(ok1, ok2...), want: string(ok1) + string(ok2), err: io.EOF, scanned: []string{"one", "two"}},
		{name: "empty body", body: nil, err: io.EOF},
		{name: "empty message", body: grpcMsg(0, nil), want: string(grpcMsg(0, nil)), err: io.EOF, scanned: []string{""}},
		{name: "the refused message and all after it stay", body: append(append(append([]byte{}, ok1...), grpcMsg(0, []byte("a LEAK"))...), ok2...),
			want: string(ok1), blocked: scanner.ReasonSecret, err: errStreamBlocked, scanned: []string{"one", "a LEAK"}},
		{name: "gzip message is scanned decompressed, forwarded as sent", body: grpcMsg(1, gz(t, []byte("gz LEAK"))), gzip: true,
			blocked: scanner.ReasonSecret, err: errStreamBlocked, scanned: []string{"gz LEAK"}},
		{name: "gzip message passes compressed", body: grpcMsg(1, gz(t, []byte("fine"))), gzip: true,
			want: string(grpcMsg(1, gz(t, []byte("fine")))), err: io.EOF, scanned: []string{"fine"}},
		{name: "compressed without grpc-encoding", body: grpcMsg(1, gz(t, []byte("x"))), blocked: ReasonGRPCEncoding, err: errStreamBlocked},
		{name: "compressed flag but not gzip", body: grpcMsg(1, []byte("not gzip")), gzip: true, blocked: ReasonGRPCEncoding, err: errStreamBlocked},
		{name: "decompression bomb", body: grpcMsg(1, bomb), gzip: true, blocked: scanner.ReasonOversize, err: errStreamBlocked},
		{name: "message over the limit", body: grpcMsg(0, bytes.Repeat([]byte("a"), 5000)), blocked: scanner.ReasonOversize, err: errStreamBlocked},
		{name: "unknown flag", body: grpcMsg(2, []byte("x")), blocked: ReasonGRPCFrame, err: errStreamBlocked},
		{name: "truncated prefix", body: ok1[:3], err: io.ErrUnexpectedEOF},
		{name: "truncated message", body: append(ok1, ok2[:6]...), want: string(ok1), err: io.ErrUnexpectedEOF, scanned: []string{"one"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			b := newTestGRPCBody(tc.body, tc.gzip, 4096, &seen)
			var out bytes.Buffer
			buf := make([]byte, 7) // small reads: messages cross Read calls
			var err error
			for {
				var n int
				n, err = b.Read(buf)
				out.Write(buf[:n])
				if err != nil {
					break
				}
			}
			if out.String() != tc.want {
				t.Errorf("forwarded %q, want %q", out.String(), tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
			if b.reason != tc.blocked {
				t.Errorf("refused with %q, want %q", b.reason, tc.blocked)
			}
			if strings.Join(seen, "|") != strings.Join(tc.scanned, "|") {
				t.Errorf("scanned %q, want %q", seen, tc.scanned)
			}
		})
	}
}

// FuzzGRPCBody: whatever the client sends, what is forwarded is a prefix of
// it made of whole messages, each of which the scanner saw.
func FuzzGRPCBody(f *testing.F) {
	f.Add(append(grpcMsg(0, []byte("one")), grpcMsg(1, []byte("x"))...), true)
	f.Add(grpcMsg(0, []byte("a LEAK")), false)
	f.Add([]byte{0, 0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, body []byte, gzipped bool) {
		var seen []string
		b := newTestGRPCBody(body, gzipped, 1024, &seen)
		out, _ := io.ReadAll(b)
		if !bytes.HasPrefix(body, out) {
			t.Fatalf("forwarded bytes that are not a prefix of the body")
		}
		n := 0
		for rest := out; len(rest) > 0; n++ {
			if len(rest) < 5 {
				t.Fatalf("forwarded a partial prefix")
			}
			size := int(binary.BigEndian.Uint32(rest[1:5]))
			if len(rest) < 5+size {
				t.Fatalf("forwarded a partial message")
			}
			rest = rest[5+size:]
		}
		if n > len(seen) {
			t.Fatalf("forwarded %d messages, scanned %d", n, len(seen))
		}
	})
}

// BenchmarkGRPCBody is the message reader's own cost: framing, memory and
// the scanner call, with a scanner that only reads.
func BenchmarkGRPCBody(b *testing.B) {
	msg := grpcMsg(0, bytes.Repeat([]byte("a"), 1<<10))
	stream := bytes.Repeat(msg, 256)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		gb := newTestGRPCBody(stream, false, 1<<20, nil)
		if _, err := io.Copy(io.Discard, gb); err != nil {
			b.Fatal(err)
		}
	}
}
