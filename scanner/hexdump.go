package scanner

import (
	"encoding/binary"
	"strings"
)

// encHexdump names the layer of a hex dump's bytes.
const encHexdump = "hexdump"

// A file shown by xxd, hexdump or od is its bytes sixteen to a line, each
// line after its offset: a token in it is cut at every line's end, in the
// hex columns and in xxd's and hexdump -C's text column alike, and no
// other reader joins the lines. hexdumpLayer reads such lines back into
// the bytes they show:
//
//	00000000: 5245 4749 4f4e 3d65 752d 7765 7374 2d31  REGION=eu-west-1   xxd (-g1, -c N)
//	00000000  52 45 47 49 4f 4e 3d 65  75 2d 77 65 73 74 2d 31  |REGI…|  hexdump -C
//	0000000 4552 4947 4e4f 653d 2d75 6577 7473 312d                      hexdump, od -x: little-endian words
//	0000000 52 45 47 49 4f 4e 3d 65 75 2d 77 65 73 74 2d 31              od -t x1
//	0000000   R   E   G   I   O   N   =   e   u   -   w   e   s   t   -   1  od -c

// minDumpBytes is the fewest bytes a dump must show to be read.
const minDumpBytes = 16

// hexdumpLayer is the bytes of each run of dump lines in s, one run per
// line; ok is false when s holds no dump of minDumpBytes.
func hexdumpLayer(s string) (string, bool) {
	var out, run []byte
	end := func() {
		if len(run) >= minDumpBytes {
			out = append(append(out, run...), '\n')
		}
		run = run[:0]
	}
	for line := range strings.Lines(s) {
		line = strings.TrimRight(line, "\r\n")
		var ok bool
		if run, ok = appendDumpLine(run, line); !ok {
			end()
		}
	}
	end()
	if len(out) == 0 {
		return "", false
	}
	return ownString(out), true
}

// dumpAhead reports whether one of the first lines of s starts like a
// dump's (an offset of six to eight hex digits, then a colon or a space):
// a dump shown in a tool's output or a file's body starts there, and the
// look costs nothing per text. The pairs of hexdump -C and od -t x1, and
// od -c's spaced characters, are marked by the feature pass wherever they
// are (fDelimHex, fSpelled).
func dumpAhead(s string) bool {
	for range 4 {
		n := 0
		for n < len(s) && n < 9 && isHexByte[s[n]] {
			n++
		}
		if n >= 6 && n <= 8 && n < len(s) && (s[n] == ':' || s[n] == ' ') {
			return true
		}
		i := strings.IndexByte(s[:min(len(s), 256)], '\n')
		if i < 0 {
			return false
		}
		s = s[i+1:]
	}
	return false
}

// appendDumpLine appends the bytes line shows, when it is a line of a dump.
func appendDumpLine(dst []byte, line string) ([]byte, bool) {
	n := 0 // the offset's digits
	for n < len(line) && n < 9 && isHexByte[line[n]] {
		n++
	}
	if n < 6 || n > 8 || n == len(line) {
		return dst, n >= 6 && n <= 8 && n == len(line) // od's last line: the end offset alone
	}
	rest, colon := line[n:], line[n] == ':'
	if colon {
		rest = rest[1:]
	}
	if len(rest) < 2 || rest[0] != ' ' {
		return dst, false
	}
	if b, ok := appendODChars(dst, rest); ok {
		return b, true
	}
	if i := strings.IndexByte(rest, '|'); i >= 0 && !colon {
		rest = rest[:i] // hexdump -C's text column
	}
	if colon {
		if i := strings.Index(strings.TrimLeft(rest, " "), "  "); i >= 0 {
			rest = strings.TrimLeft(rest, " ")[:i] // xxd's text column
		}
	}
	start, width, short := len(dst), 0, false
	for f := range strings.FieldsSeq(rest) {
		if width == 0 {
			width = len(f)
		}
		// The last group of an odd count of bytes is shorter (xxd).
		if short || len(f) > width || len(f)%2 != 0 || width > 8 || !isHexStr(f) {
			return dst[:start], false
		}
		short = len(f) < width
		for i := 0; i < len(f); i += 2 {
			hi, _ := hexVal(f[i])
			lo, _ := hexVal(f[i+1])
			dst = append(dst, hi<<4|lo)
		}
		if !colon && width > 2 && !short {
			// hexdump's and od's words are the machine's: little-endian.
			w := dst[len(dst)-width/2:]
			switch width {
			case 4:
				binary.BigEndian.PutUint16(w, binary.LittleEndian.Uint16(w))
			case 8:
				binary.BigEndian.PutUint32(w, binary.LittleEndian.Uint32(w))
			}
		}
	}
	return dst, len(dst) > start
}

// appendODChars appends what a line of od -c shows after its offset: cells
// four wide, each a character, a C escape or three octal digits, right
// aligned (a space is a cell of spaces).
func appendODChars(dst []byte, rest string) ([]byte, bool) {
	if len(rest)%4 != 0 || len(rest) > 64 {
		return dst, false
	}
	start := len(dst)
	for i := 0; i < len(rest); i += 4 {
		cell := strings.TrimLeft(rest[i:i+4], " ")
		switch {
		case cell == "":
			dst = append(dst, ' ')
		case len(cell) == 1:
			dst = append(dst, cell[0])
		case len(cell) == 2 && cell[0] == '\\':
			c, ok := odEscapes[cell[1]]
			if !ok {
				return dst[:start], false
			}
			dst = append(dst, c)
		case len(cell) == 3 && isOctal(cell):
			dst = append(dst, (cell[0]-'0')<<6|(cell[1]-'0')<<3|(cell[2]-'0'))
		default:
			return dst[:start], false
		}
	}
	return dst, true
}

// odEscapes are od -c's escapes.
var odEscapes = map[byte]byte{'0': 0, 'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\'}

func isOctal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return s[0] <= '3'
}
