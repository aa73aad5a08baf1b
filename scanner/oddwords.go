package scanner

import (
	"encoding/ascii85"
	"strings"
)

// Layers of a URL's or a header's values written so that their bytes are
// punctuation as much as letters: ROT47 (`tr '!-~' 'P-~!-O'`), and base85
// (Python's b85encode and a85encode, btoa's ascii85). A whole text is not
// read so (a body's words are too many to try): the URL and the headers
// are where a link or a request carries data out, and are short.
const (
	encROT47  = "rot47"
	encBase85 = "base85"
	encA85    = "ascii85"
)

// maxOddText is the longest URL or header text whose words are tried.
const maxOddText = 4 << 10

// minOddWord is the shortest word tried: what a credential turns into.
const minOddWord = 20

// oddWords reads the values of s (a URL's query lines "k=v", or a header's
// "Name: value") word by word, and a word of minOddWord bytes or more as
// base85 or ascii85 when that decodes to text, and as ROT47 when it holds
// a provider's token prefix in ROT47 and punctuation that URLs and base64
// do not use (oddPunct); the readings one per line, ok false for none.
func oddWords(s string) (ascii, b85, rot string, ok bool) {
	var a, b, r []string
	for len(s) > 0 {
		line, rest, _ := strings.Cut(s, "\n")
		s = rest
		if _, v, found := strings.Cut(line, ": "); found {
			line = v
		} else if _, v, found := strings.Cut(line, "="); found {
			line = v
		}
		for i := 0; i < len(line); {
			for i < len(line) && isSpaceByte(line[i]) {
				i++
			}
			j := i
			for j < len(line) && !isSpaceByte(line[j]) {
				j++
			}
			w := line[i:j]
			i = j
			if len(w) < minOddWord {
				continue
			}
			if oddPunct(w) && rot47Prefixes.in(w) {
				r = append(r, rot47(w))
			}
			if startsText85(w, func(c byte) int { return int(b85Value[c]) }) {
				if d, ok := decodeB85(w); ok {
					b = append(b, d)
				}
			}
			if w := strings.TrimSuffix(strings.TrimPrefix(w, "<~"), "~>"); startsText85(w, func(c byte) int { return int(c) - '!' }) {
				if d, ok := decodeA85(w); ok {
					a = append(a, d)
				}
			}
		}
	}
	return strings.Join(a, "\n"), strings.Join(b, "\n"), strings.Join(r, "\n"), len(a)+len(b)+len(r) > 0
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// oddPunct reports whether w holds punctuation that URLs and base64 do
// not use ('-', '_', '.', '/', '+', '=', '%', '~', ':' and '&' aside), as
// a token in ROT47 does (k turns to '<', P to '!'): a word of letters and
// digits alone that holds "970" ("hf_" in ROT47) is an id, not a token.
func oddPunct(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= '!' && c <= '~' && !isAlnum(c) && strings.IndexByte("-_./+=%~:&", c) < 0 {
			return true
		}
	}
	return false
}

// rot47Prefixes are the providers' token prefixes in ROT47, by their first
// byte: a word that holds one holds a token in ROT47.
var rot47Prefixes = newInfixSet(mapWords(tokenPrefixes, rot47))

// infixSet finds whether a text holds one of a set of words, looking only
// at the bytes a word starts with.
type infixSet [256][]string

func newInfixSet(words []string) *infixSet {
	x := &infixSet{}
	for _, w := range words {
		x[w[0]] = append(x[w[0]], w)
	}
	return x
}

func (x *infixSet) in(t string) bool {
	for i := 0; i < len(t); i++ {
		for _, w := range x[t[i]] {
			if strings.HasPrefix(t[i:], w) {
				return true
			}
		}
	}
	return false
}

// rot47 turns the bytes from '!' to '~' 47 places on (its own inverse).
func rot47(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= '!' && c <= '~' {
			b[i] = '!' + (c-'!'+47)%94
		}
	}
	return string(b)
}

// startsText85 reports whether w, read as base85 whose digits digit
// gives, may start with ASCII text: the first digit of each of its first
// four groups is 40 or less (0x7f7f7f7f / 85^4). Most words are not, and
// are not decoded.
func startsText85(w string, digit func(byte) int) bool {
	for i := 0; i < len(w) && i < 20; i += 5 {
		if d := digit(w[i]); d < 0 || d > 40 {
			return false
		}
	}
	return true
}

// decodeA85 is ascii85 (Adobe's, btoa's, Python's a85encode), when w is
// that and holds text.
func decodeA85(w string) (string, bool) {
	dst := make([]byte, 4*len(w)/5+4)
	n, _, err := ascii85.Decode(dst, []byte(w), true)
	if err != nil || n < 12 || !textual(dst[:n]) {
		return "", false
	}
	return string(dst[:n]), true
}

// b85Digits is base85's alphabet as RFC 1924, Python's b85encode and git
// write it.
const b85Digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

var b85Value = digitValues(b85Digits)

// decodeB85 is base85 (RFC 1924's digits), when w is that and holds text.
func decodeB85(w string) (string, bool) {
	if len(w)%5 == 1 {
		return "", false
	}
	out := make([]byte, 0, 4*len(w)/5+4)
	for i := 0; i < len(w); i += 5 {
		g := w[i:min(i+5, len(w))]
		var v uint64
		for k := 0; k < 5; k++ {
			d := int8(84) // a short group is padded with the last digit
			if k < len(g) {
				if d = b85Value[g[k]]; d < 0 {
					return "", false
				}
			}
			v = v*85 + uint64(d)
		}
		if v > 0xffffffff {
			return "", false
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
		if len(g) < 5 {
			out = out[:len(out)-(5-len(g))]
		}
	}
	if len(out) < 12 || !textual(out) {
		return "", false
	}
	return string(out), true
}
