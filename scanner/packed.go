package scanner

import (
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"strings"
	"unsafe"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

// Compressed data: `tar cz ~/.ssh | curl --data-binary @-`, a zip file
// posted as a form's file, or `gzip | base64` in one line of text is how a
// directory gets out, and what it holds is in no byte of the body. A body,
// a part or an encoded run whose bytes start with a compressor's magic
// number (or a zip archive's) is inflated, within the scan's budget, and
// what it holds is scanned as a layer of its own. A tarball needs no more:
// its files are in it as they are.

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
	case len(b) >= 12 && string(b[:6]) == "\xfd7zXZ\x00": // xz, Python's lzma module
		return "xz"
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
func inflate(format string, b []byte, limit int64, m *meter) ([]byte, error) {
	var r io.Reader
	var err error
	switch format {
	case "gzip":
		// Every member of the stream: `cat a.gz b.gz` is one gzip file.
		r, err = gzip.NewReader(bytes.NewReader(b))
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
	case "xz":
		if !xzDictsWithin(b, maxXZDict) {
			return nil, errInflateLimit // refused, as a stream that inflates past the limit is
		}
		r, err = xz.ReaderConfig{DictCap: 1 << 20}.NewReader(bytes.NewReader(b))
	default:
		return nil, errors.New("scanner: no compressed format " + format)
	}
	if err != nil {
		return nil, err
	}
	hint := int(min(int64(len(b))*4, limit) + 1)
	r, ok := m.counted(r, hint)
	if !ok {
		return nil, ErrScanMemory
	}
	out, err := readAllHint(&maxReader{r: r, left: limit}, hint)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, errInflateLimit
	case errors.Is(err, ErrScanMemory):
		return nil, err
	case err != nil && (len(out) == 0 || format == "zlib"):
		return nil, err // zlib's weak magic: only a whole stream counts
	}
	return out, nil
}

// maxXZDict is the largest dictionary an xz block may ask for: xz -9's.
// The decoder allocates what a block's header asks for (up to 4 GiB), so
// a few bytes could make it reserve that much.
const maxXZDict = 64 << 20

// xzDictsWithin reports whether the xz stream b's blocks ask for LZMA2
// dictionaries of at most max bytes, as far as their headers can be read
// without decoding: every block of a stream whose block headers hold their
// compressed sizes (xz -T writes them), the first of one that does not. A
// later block is then decoded with what it asks for; the output stays
// within the scan's limit, and pages of a dictionary never written are
// not resident.
func xzDictsWithin(b []byte, max int64) bool {
	if len(b) < 12 {
		return false
	}
	checkSizes := [16]int{0, 4, 4, 4, 8, 8, 8, 16, 16, 16, 32, 32, 32, 64, 64, 64}
	check := checkSizes[b[7]&0x0f]
	for at, blocks := 12, 0; at < len(b) && b[at] != 0 && blocks < 1024; blocks++ {
		size := (int(b[at]) + 1) * 4
		if at+size > len(b) {
			return false
		}
		h := b[at+2 : at+size-4] // after the size and flags bytes, before the CRC32
		flags := b[at+1]
		var compressed uint64
		var ok bool
		if flags&0x40 != 0 {
			if compressed, h, ok = uvarint(h); !ok {
				return false
			}
		}
		if flags&0x80 != 0 {
			if _, h, ok = uvarint(h); !ok {
				return false
			}
		}
		for range int(flags&3) + 1 {
			var id, n uint64
			if id, h, ok = uvarint(h); !ok {
				return false
			}
			if n, h, ok = uvarint(h); !ok || n > uint64(len(h)) {
				return false
			}
			if id == 0x21 && n == 1 { // LZMA2: one byte, its dictionary
				if d, err := lzma.DecodeDictCap(h[0]); err != nil || d > max {
					return false
				}
			}
			h = h[n:]
		}
		if flags&0x40 == 0 || compressed > uint64(len(b)) {
			return true // the next block is known only by decoding this one
		}
		at += size + int(compressed)
		at += (4 - at%4) % 4 // padding
		at += check
	}
	return true
}

// uvarint reads an xz multibyte integer from the start of b.
func uvarint(b []byte) (v uint64, rest []byte, ok bool) {
	for i := 0; i < len(b) && i < 9; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}

// maxZipFiles bounds the files of a zip archive read: more is past the limit.
const maxZipFiles = 10_000

// archiveOf names what s is when it is compressed data, a zip archive or
// a git push's packfile: packedFormat's formats, "zip" or encGitPack; ""
// when none.
func archiveOf(s string) string {
	if strings.HasPrefix(s, "PK\x03\x04") {
		return "zip"
	}
	if packStart(s) >= 0 {
		return encGitPack
	}
	return packedFormat(unsafe.Slice(unsafe.StringData(s), min(len(s), 16)))
}

// unzip is the files of a zip archive, one after the other, at most limit
// bytes of them; errInflateLimit past it. A file that cannot be read (an
// encrypted one, a method zip does not know) is left out.
func unzip(b []byte, limit int64, m *meter) ([]byte, error) {
	r, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	if len(r.File) > maxZipFiles {
		return nil, errInflateLimit
	}
	var out []byte
	for _, f := range r.File {
		if f.FileInfo().IsDir() {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			continue
		}
		left := limit - int64(len(out))
		out, err = readInto(&maxReader{r: m.reader(rc), left: left}, out)
		rc.Close()
		if errors.Is(err, errTooLarge) {
			return nil, errInflateLimit
		}
		out = append(out, '\n')
	}
	return out, nil
}
