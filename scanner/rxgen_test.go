package scanner

import (
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"unicode"
)

// sampleFor returns a random string that re's syntax tree describes: the
// "format" of a rule, for the differential test. Empty-width assertions are
// left to the surrounding text (which the test separates with spaces).
func sampleFor(r *rand.Rand, re *syntax.Regexp) string {
	var b strings.Builder
	genRegexp(r, re, &b, 0)
	return b.String()
}

func genRegexp(r *rand.Rand, re *syntax.Regexp, b *strings.Builder, depth int) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && r.IntN(2) == 0 {
				c = unicode.SimpleFold(c)
				if c > unicode.MaxASCII {
					c = unicode.SimpleFold(c)
				}
			}
			b.WriteRune(c)
		}
	case syntax.OpCharClass:
		b.WriteRune(pickRune(r, re.Rune))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte(byte('a' + r.IntN(26)))
	case syntax.OpCapture:
		genRegexp(r, re.Sub[0], b, depth)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 1
		switch re.Op {
		case syntax.OpStar:
			hi = 3
		case syntax.OpPlus:
			lo, hi = 1, 12
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + 24
			}
		}
		if depth > 3 {
			hi = lo
		}
		n := lo + r.IntN(hi-lo+1)
		for range n {
			genRegexp(r, re.Sub[0], b, depth+1)
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			genRegexp(r, s, b, depth)
		}
	case syntax.OpAlternate:
		genRegexp(r, re.Sub[r.IntN(len(re.Sub))], b, depth)
	}
}

// pickRune picks from a class, preferring printable ASCII members.
func pickRune(r *rand.Rand, ranges []rune) rune {
	var ascii []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		for c := ranges[i]; c <= ranges[i+1] && c < 0x7f; c++ {
			if c >= 0x20 || c == '\t' || c == '\n' {
				ascii = append(ascii, c)
			}
		}
	}
	if len(ascii) > 0 {
		// Bias away from whitespace so that tokens stay tokens.
		c := ascii[r.IntN(len(ascii))]
		if c == '\n' || c == '\t' || c == ' ' {
			c = ascii[r.IntN(len(ascii))]
		}
		return c
	}
	if len(ranges) == 0 {
		return 'x'
	}
	return ranges[0]
}
