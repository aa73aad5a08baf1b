package gateway

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// chunkReader returns its data in reads of the given sizes (the rest in one).
type chunkReader struct {
	data  []byte
	sizes []int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.sizes) > 0 {
		n = min(n, r.sizes[0])
		r.sizes = r.sizes[1:]
	}
	n = copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// copyConn switches between its small and its large buffer as reads fill
// or fall short: every byte must come out once and in order across those
// switches, and at the end of the stream.
func TestCopyConnKeepsEveryByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 400<<10)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	cases := map[string][]int{
		"small reads":            {1, 10, 100, smallCopyBuf - 1, 3},
		"fills small, then bulk": {smallCopyBuf, 32 << 10, 32 << 10, 32 << 10},
		"bulk, short, bulk":      {smallCopyBuf, 32 << 10, 5, smallCopyBuf, 32 << 10, 1},
		"one byte under small":   {smallCopyBuf - 1, smallCopyBuf, smallCopyBuf - 1, smallCopyBuf},
		"random":                 nil,
	}
	for i := 0; i < 200; i++ {
		cases["random"] = append(cases["random"], 1+rng.IntN(40<<10))
	}
	for name, sizes := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			copyConn(&out, &chunkReader{data: data, sizes: append([]int(nil), sizes...)})
			if !bytes.Equal(out.Bytes(), data) {
				t.Fatalf("copied %d bytes, want the %d read, in order", out.Len(), len(data))
			}
		})
	}
}

// A copy that waits on a quiet connection holds only its small buffer:
// the bulk buffer goes back once a read falls short.
func TestCopyConnGivesBackItsBulkBuffer(t *testing.T) {
	r := &chunkReader{data: make([]byte, smallCopyBuf+2*(32<<10)+10), sizes: []int{smallCopyBuf, 32 << 10, 32 << 10, 10}}
	var seen []int
	copyConn(io.Discard, readSizes{r, &seen})
	// The reads' buffers: small (filled: borrow), big, big, big (the
	// 10-byte read: give back), then small for the EOF.
	want := []int{smallCopyBuf, 32 << 10, 32 << 10, 32 << 10, smallCopyBuf}
	if len(seen) != len(want) {
		t.Fatalf("read with buffers of %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("read with buffers of %v, want %v", seen, want)
		}
	}
}

// readSizes records the size of each buffer its reader is asked to fill.
type readSizes struct {
	r    io.Reader
	seen *[]int
}

func (r readSizes) Read(p []byte) (int, error) {
	*r.seen = append(*r.seen, len(p))
	return r.r.Read(p)
}
