package scanner

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"

	"github.com/klauspost/compress/zstd"
)

// Compressed data inside an encoded run: `gzip | base64` (or `tar cz`,
// `xxd -p`) is how a shell one-liner gets a file or a directory out in one
// line of text, and its base64 decodes to bytes that are no text. A run
// whose bytes start with a compressor's magic number is inflated, with the
// scan's budget, and what it holds is scanned as a layer of its own.

// packedFormat names the compressed format b starts with, "" for none.
// zlib's two-byte header is checked for its checksum (a multiple of 31) and
// deflate as its method, so that few texts decode to one by chance; a
// false start costs one failed header read.
func packedFormat(b []byte) string {
	switch {
	case len(b) >= 10 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 8:
		return "gzip"
	case len(b) >= 6 && b[0] == 0x78 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0:
		return "zlib"
	case len(b) >= 9 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd:
		return "zstd"
	case len(b) >= 14 && b[0] == 'B' && b[1] == 'Z' && b[2] == 'h' && b[3] >= '1' && b[3] <= '9':
		return "bzip2"
	}
	return ""
}

// errInflateLimit is an inflation that would go past what the scan may
// still inflate: the caller reports a decompression-limit finding.
var errInflateLimit = errors.New("scanner: compressed run inflates past the limit")

// inflate decompresses b, which packedFormat named format, to at most
// limit bytes. A stream that is not what its magic says is an error (the
// run is then no layer); one longer than limit is errInflateLimit. A
// stream cut short keeps what it decoded (a truncated tarball is still
// read).
func inflate(format string, b []byte, limit int64) ([]byte, error) {
	var r io.Reader
	var err error
	switch format {
	case "gzip":
		var z *gzip.Reader
		if z, err = gzip.NewReader(bytes.NewReader(b)); err == nil {
			z.Multistream(false)
			r = z
		}
	case "zlib":
		r, err = zlib.NewReader(bytes.NewReader(b))
	case "zstd":
		var z *zstd.Decoder
		if z, err = zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)+1)); err == nil {
			defer z.Close()
			r = z
		}
	case "bzip2":
		r = bzip2.NewReader(bytes.NewReader(b))
	default:
		return nil, errors.New("scanner: no compressed format " + format)
	}
	if err != nil {
		return nil, err
	}
	out, err := readAllHint(&maxReader{r: r, left: limit}, int(min(int64(len(b))*4, limit)+1))
	switch {
	case errors.Is(err, errTooLarge):
		return nil, errInflateLimit
	case err != nil && (len(out) == 0 || format == "zlib"):
		return nil, err // zlib's weak magic: only a whole stream counts
	}
	return out, nil
}
