package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/sluice-egress/sluice/scanner"
)

// wsFrames builds a stream of server frames from data, one frame per byte,
// and returns it with the offsets where each frame ends.
func wsFrames(data []byte) (stream []byte, ends map[int]bool) {
	ends = map[int]bool{}
	for _, b := range data {
		n := int(b >> 2)
		hdr := []byte{0x81, 0}
		switch b & 3 {
		case 0:
			hdr[1] = byte(n % 126)
			n %= 126
		case 1:
			n += 126
			hdr[1] = 126
			hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
		case 2:
			hdr[1] = 127
			hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
		case 3:
			hdr[1] = 0x80 | byte(n%126) // masked
			n %= 126
			hdr = append(hdr, 1, 2, 3, 4)
		}
		stream = append(stream, hdr...)
		stream = append(stream, bytes.Repeat([]byte{b}, n)...)
		ends[len(stream)] = true
	}
	return stream, ends
}

// FuzzWSFrameTracker checks that the tracker stops exactly at frame ends,
// however the stream is cut into writes.
func FuzzWSFrameTracker(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0xff, 0x80}, uint8(3))
	f.Add([]byte{5, 9, 200}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		stream, ends := wsFrames(data)
		var tr wsFrameTracker
		seen := map[int]bool{}
		off := 0
		for off < len(stream) {
			end := min(off+int(chunk)+1, len(stream))
			for q := stream[off:end]; len(q) > 0; {
				k := tr.next(q)
				if k == 0 {
					t.Fatal("next made no progress")
				}
				off += k
				q = q[k:]
				if tr.atBoundary() {
					if !ends[off] {
						t.Fatalf("boundary at %d, not a frame end", off)
					}
					seen[off] = true
				}
			}
		}
		for e := range ends {
			if !seen[e] {
				t.Fatalf("frame end %d missed", e)
			}
		}
	})
}

type passScanner struct{}

func (passScanner) Scan(context.Context, *scanner.Request) (*scanner.Result, error) {
	return &scanner.Result{}, nil
}

// FuzzWSStep feeds arbitrary client bytes to the frame reader: it must not
// panic, never hold more than the limit and release only whole frames.
func FuzzWSStep(f *testing.F) {
	f.Add([]byte{0x81, 0x85, 1, 2, 3, 4, 'h' ^ 1, 'e' ^ 2, 'l' ^ 3, 'l' ^ 4, 'o' ^ 1})
	f.Add([]byte{0x01, 0x81, 0, 0, 0, 0, 'a', 0x89, 0x80, 0, 0, 0, 0, 0x80, 0x81, 0, 0, 0, 0, 'b'})
	f.Add([]byte{0x82, 0xff, 0, 0, 0, 0, 0xff, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &wsSession{g: &Gateway{Scanner: passScanner{}, Logger: slog.New(slog.DiscardHandler)},
			r: httptest.NewRequest("GET", "/ws", nil), max: 256}
		br := bufio.NewReader(bytes.NewReader(data))
		var out []byte
		for {
			b, err := s.step(br)
			if s.size > s.max || int64(cap(s.msg)) > s.max {
				t.Fatalf("holding %d bytes (%d allocated) over the limit %d", s.size, cap(s.msg), s.max)
			}
			if err != nil {
				break
			}
			for _, p := range b {
				out = append(out, p...)
			}
		}
		// What was released is whole frames the client sent (control frames
		// may overtake the fragments of a message held for its scan).
		if len(out) > len(data) {
			t.Fatal("released more than the client sent")
		}
		rb := bufio.NewReader(bytes.NewReader(out))
		for rb.Buffered() > 0 || len(out) > 0 {
			hdr, h, err := readWSHeader(rb)
			if err != nil {
				break
			}
			fr := append(hdr, make([]byte, h.length)...)
			if _, err := io.ReadFull(rb, fr[len(hdr):]); err != nil {
				t.Fatal("released part of a frame")
			}
			if !bytes.Contains(data, fr) {
				t.Fatal("released a frame the client did not send")
			}
		}
		var tr wsFrameTracker
		tr.consume(out)
		if !tr.atBoundary() {
			t.Fatal("released part of a frame")
		}
	})
}

// TestWSMaxMessage: the gateway's own field bounds a message, whatever the
// scanner; a reload changes it for the WebSockets opened after.
func TestWSMaxMessage(t *testing.T) {
	g := &Gateway{}
	if got := g.wsMaxMessage(); got != wsDefaultMaxMessage {
		t.Fatalf("default limit %d, want %d", got, wsDefaultMaxMessage)
	}
	g.SetMaxWebSocketMessage(4096)
	if got := g.wsMaxMessage(); got != 4096 {
		t.Fatalf("limit %d after SetMaxWebSocketMessage(4096)", got)
	}
}
