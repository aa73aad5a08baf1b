package gateway

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"io"
)

// wsCloseFrame builds a Close frame with code and reason (cut to fit a
// control frame), masked when it goes to a server.
func wsCloseFrame(code int, reason string, masked bool) []byte {
	payload := binary.BigEndian.AppendUint16(nil, uint16(code))
	if len(reason) > wsMaxControlPayload-2 {
		reason = reason[:wsMaxControlPayload-2]
	}
	payload = append(payload, reason...)
	frame := []byte{0x80 | wsOpClose, byte(len(payload))}
	if masked {
		var key [4]byte
		rand.Read(key[:])
		frame[1] |= 0x80
		frame = append(frame, key[:]...)
		for i := range payload {
			payload[i] ^= key[i%4]
		}
	}
	return append(frame, payload...)
}

// wsHeader is a parsed frame header.
type wsHeader struct {
	fin    bool
	rsv    byte
	op     byte
	masked bool
	key    [4]byte
	length uint64
}

// readWSHeader reads a frame header and returns its bytes as received.
func readWSHeader(br *bufio.Reader) ([]byte, wsHeader, error) {
	var h wsHeader
	hdr := make([]byte, 2, 14)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, h, err
	}
	h.fin = hdr[0]&0x80 != 0
	h.rsv = hdr[0] & 0x70
	h.op = hdr[0] & 0x0f
	h.masked = hdr[1]&0x80 != 0
	ext := 0
	switch hdr[1] & 0x7f {
	case 126:
		ext = 2
	case 127:
		ext = 8
	}
	if h.masked {
		ext += 4
	}
	hdr = hdr[:2+ext]
	if _, err := io.ReadFull(br, hdr[2:]); err != nil {
		return nil, h, unexpected(err)
	}
	h.length, h.key = wsLengthAndKey(hdr)
	return hdr, h, nil
}

// wsLengthAndKey decodes the payload length and masking key of a complete header.
func wsLengthAndKey(hdr []byte) (uint64, [4]byte) {
	var key [4]byte
	n := uint64(hdr[1] & 0x7f)
	rest := hdr[2:]
	switch n {
	case 126:
		n, rest = uint64(binary.BigEndian.Uint16(rest)), rest[2:]
	case 127:
		n, rest = binary.BigEndian.Uint64(rest), rest[8:]
	}
	if hdr[1]&0x80 != 0 {
		copy(key[:], rest)
	}
	return n, key
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// wsFrameTracker follows frame boundaries in a byte stream without keeping
// payloads: enough to know where a frame of the gateway's own may go.
type wsFrameTracker struct {
	hdr  [14]byte
	n    int    // header bytes seen of the frame in progress
	need int    // header length, once known (0: not yet)
	left uint64 // payload bytes left
}

func (t *wsFrameTracker) atBoundary() bool { return t.n == 0 && t.left == 0 }

// consume feeds all of p.
func (t *wsFrameTracker) consume(p []byte) {
	for len(p) > 0 {
		p = p[t.next(p):]
	}
}

// next feeds p up to the end of the frame in progress and returns how many
// bytes it took.
func (t *wsFrameTracker) next(p []byte) int {
	i := 0
	for t.left == 0 && i < len(p) {
		// In a header (or at a boundary, starting one).
		t.hdr[t.n] = p[i]
		t.n++
		i++
		if t.n == 2 {
			t.need = 2
			switch t.hdr[1] & 0x7f {
			case 126:
				t.need += 2
			case 127:
				t.need += 8
			}
			if t.hdr[1]&0x80 != 0 {
				t.need += 4
			}
		}
		if t.n >= 2 && t.n == t.need {
			t.left, _ = wsLengthAndKey(t.hdr[:t.n])
			t.n, t.need = 0, 0
			if t.left == 0 {
				return i // an empty frame ends here
			}
		}
	}
	k := uint64(len(p) - i)
	if k > t.left {
		k = t.left
	}
	t.left -= k
	return i + int(k)
}
