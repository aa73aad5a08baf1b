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
	eachCardWindow(text, func(ws, we int) {
		for _, m := range cardRE.FindAllStringSubmatchIndex(text[ws:we], -1) {
			checkCard(text, ws+m[2], ws+m[3], emit)
		}
	})
}

// checkCard emits text[start:end] if it is a card number.
func checkCard(text string, start, end int, emit func(Finding)) {
	raw := text[start:end]
	if strings.Contains(raw, " ") && strings.Contains(raw, "-") {
		return
	}
	digits := strings.NewReplacer(" ", "", "-", "").Replace(raw)
	if len(digits) < 13 || len(digits) > 19 || !luhn(digits) || !cardIssuer(digits) || repetitive(digits) {
		return
	}
	emit(secretAt(RulePaymentCard, text, start, end))
}

// eachCardWindow calls fn with the windows of text where cardRE may match,
// so that it does not read a whole large text: each maximal run of digits,
// spaces and dashes with 13 digits or more, with the byte before it and
// two after (what cardRE reads around its number). Windows that touch are
// joined, so that a byte that one match takes is not another's in a window
// either.
func eachCardWindow(text string, fn func(ws, we int)) {
	ps, pe := -1, -1 // the pending window
	for i := 0; i < len(text); {
		c := text[i]
		if c < '0' || c > '9' {
			i++
			continue
		}
		start, digits := i, 0
		for ; i < len(text); i++ {
			if c := text[i]; c >= '0' && c <= '9' {
				digits++
			} else if c != ' ' && c != '-' {
				break
			}
		}
		if digits < 13 {
			continue
		}
		ws, we := max(0, start-1), min(len(text), i+2)
		if ps >= 0 && ws <= pe {
			pe = max(pe, we)
			continue
		}
		if ps >= 0 {
			fn(ps, pe)
		}
		ps, pe = ws, we
	}
	if ps >= 0 {
		fn(ps, pe)
	}
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
