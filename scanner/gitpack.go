package scanner

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"io"
	"strings"
)

// A git push (`POST …/git-receive-pack`) carries its objects in a
// packfile, each one zlib-compressed: a file committed with a secret in
// it, pushed to the repository's own remote (an allowed host), showed the
// scanner none of its bytes. The objects are inflated, within the scan's
// budget, and scanned as one layer: a blob is the file as it is, a delta
// holds the bytes it adds as they are.

// encGitPack names the layer of a packfile's objects.
const encGitPack = "git-pack"

// packSignature starts a packfile: "PACK" and the high bytes of its version.
const packSignature = "PACK\x00\x00\x00"

// maxPackPrefix is how far into a push's body the packfile may start: the
// pkt-lines before it name the refs updated, a few hundred bytes each.
const maxPackPrefix = 1 << 16

// packStart is where the packfile in s starts, -1 for none: at the start,
// or after the ref updates of a push, which begin with a pkt-line's length
// and the old object id in hex.
func packStart(s string) int {
	if strings.HasPrefix(s, packSignature) {
		return 0
	}
	if len(s) < 48 || !isHexStr(s[:44]) {
		return -1
	}
	return strings.Index(s[:min(len(s), maxPackPrefix)], packSignature)
}

// objectIDLen is the length of the object ids of the push s: 32 bytes
// when its first ref update names SHA-256 ids (64 hex digits), else 20.
func objectIDLen(s string) int {
	if len(s) > 69 && isHexStr(s[4:68]) && s[68] == ' ' {
		return 32
	}
	return 20
}

// packObjects inflates the objects of the packfile b, one after the
// other, at most limit bytes of them; errInflateLimit past it. idLen is
// the length of the repository's object ids, which deltas on an object by
// its id start with. A packfile cut short, or an object that does not
// inflate, ends it with what was read.
func packObjects(b []byte, idLen int, limit int64, m *meter) ([]byte, error) {
	if len(b) < 12 || string(b[:4]) != "PACK" {
		return nil, errors.New("scanner: no packfile")
	}
	count := binary.BigEndian.Uint32(b[8:12])
	r := bytes.NewReader(b[12:])
	var out []byte
	for range count {
		c, err := r.ReadByte()
		if err != nil {
			break
		}
		typ := c >> 4 & 7
		for err == nil && c&0x80 != 0 { // the object's size
			c, err = r.ReadByte()
		}
		switch typ {
		case 1, 2, 3, 4: // commit, tree, blob, tag
		case 6: // a delta on an object before it, by offset
			c, err = r.ReadByte()
			for err == nil && c&0x80 != 0 {
				c, err = r.ReadByte()
			}
		case 7: // a delta on an object by its id
			_, err = r.Seek(int64(idLen), io.SeekCurrent)
		default:
			return out, nil
		}
		if err != nil {
			break
		}
		// bytes.Reader is a flate.Reader: zlib reads no byte past the
		// object's stream, and r is then at the next object.
		z, err := zlib.NewReader(r)
		if err != nil {
			break
		}
		out, err = readInto(&maxReader{r: m.reader(z), left: limit - int64(len(out))}, out)
		if errors.Is(err, errTooLarge) {
			return nil, errInflateLimit
		}
		if err != nil {
			break
		}
		out = append(out, '\n')
	}
	return out, nil
}
