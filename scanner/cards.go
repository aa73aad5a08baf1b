package scanner

import (
	"regexp"
	"strconv"
	"strings"
)

// cardRE finds 13 to 19 digits, optionally in groups split by single spaces
// or dashes, not inside a longer run of digits or word characters.
var cardRE = regexp.MustCompile(`(?:^|[^0-9A-Za-z_.\-])((?:\d[ -]?){12,18}\d)(?:$|[^0-9A-Za-z_.\-]|\.(?:$|\D))`)

// detectCards reports payment card numbers: the Luhn check digit, an
// issuer's prefix and a length that issuer uses. Separators must be
// consistent (all spaces or all dashes), as people and forms write them.
func detectCards(text string, emit func(Finding)) {
	if !hasDigitRun(text, 13) {
		return
	}
	for _, m := range cardRE.FindAllStringSubmatchIndex(text, -1) {
		raw := text[m[2]:m[3]]
		if strings.Contains(raw, " ") && strings.Contains(raw, "-") {
			continue
		}
		digits := strings.NewReplacer(" ", "", "-", "").Replace(raw)
		if len(digits) < 13 || len(digits) > 19 || !luhn(digits) || !cardIssuer(digits) || repetitive(digits) {
			continue
		}
		emit(secretAt(RulePaymentCard, text, m[2], m[3]))
	}
}

// hasDigitRun reports whether text holds n digits (separators aside) close
// together: a cheap filter before the regexp.
func hasDigitRun(text string, n int) bool {
	c := 0
	for i := 0; i < len(text); i++ {
		switch b := text[i]; {
		case b >= '0' && b <= '9':
			c++
			if c >= n {
				return true
			}
		case b == ' ' || b == '-':
		default:
			c = 0
		}
	}
	return false
}

// luhn reports whether the digits end in a valid Luhn check digit.
func luhn(digits string) bool {
	sum := 0
	double := false
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// cardIssuer reports whether the number has the prefix and the length of a
// card network (ISO/IEC 7812 IINs as the networks publish them).
func cardIssuer(d string) bool {
	n := len(d)
	p := func(k int) int { v, _ := strconv.Atoi(d[:k]); return v }
	switch {
	case d[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case p(2) >= 51 && p(2) <= 55, p(4) >= 2221 && p(4) <= 2720: // Mastercard
		return n == 16
	case p(2) == 34 || p(2) == 37: // American Express
		return n == 15
	case p(4) == 6011, p(2) == 65, p(3) >= 644 && p(3) <= 649: // Discover
		return n >= 16 && n <= 19
	case p(4) >= 3528 && p(4) <= 3589: // JCB
		return n >= 16 && n <= 19
	case p(3) >= 300 && p(3) <= 305, p(2) == 36, p(2) == 38, p(2) == 39: // Diners Club
		return n >= 14 && n <= 19
	case p(2) == 62: // UnionPay
		return n >= 16 && n <= 19
	case p(4) == 5018 || p(4) == 5020 || p(4) == 5038 || p(4) == 5893 || p(4) == 6304 || p(4) == 6759 || p(4) == 6761 || p(4) == 6762 || p(4) == 6763: // Maestro
		return n >= 12 && n <= 19
	}
	return false
}

// repetitive reports digits that are one digit repeated, or counting up:
// placeholders, not cards.
func repetitive(d string) bool {
	same, up := true, true
	for i := 1; i < len(d); i++ {
		if d[i] != d[0] {
			same = false
		}
		if (d[i-1]-'0'+1)%10 != d[i]-'0' {
			up = false
		}
	}
	return same || up
}
