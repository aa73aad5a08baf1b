package scanner

import (
	"regexp"
	"strings"
)

// ibanRE reads an IBAN from its start: a country code, two check digits
// and the account part, solid or in groups of four split by single spaces.
var ibanRE = regexp.MustCompile(`^[A-Z]{2}\d{2}(?: ?[0-9A-Z]{4}){2,7}(?: ?[0-9A-Z]{1,4})?`)

// ibanLengths are the IBAN lengths by country (the SWIFT IBAN registry).
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
	"BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
	"EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
	"GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
	"JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
	"MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
	"NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
	"SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

// detectIBAN reports IBANs: the country's length and the ISO 7064 mod-97
// check (a random string passes it one time in 97).
func detectIBAN(text string, emit func(Finding)) {
	for p := 0; p+4 <= len(text); p++ {
		// An IBAN starts with two capitals and two digits: a byte that is
		// neither rules out the four starts that would put it there.
		if c := text[p+3]; !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			p += 3
			continue
		}
		if !ibanStartAt(text, p) || p > 0 && isAlnum(text[p-1]) {
			continue
		}
		loc := ibanRE.FindStringIndex(text[p:min(len(text), p+42)])
		if loc == nil {
			continue
		}
		end := p + loc[1]
		raw := text[p:end]
		if end < len(text) && isAlnum(text[end]) {
			continue // inside a longer word
		}
		iban := strings.ReplaceAll(raw, " ", "")
		if n, ok := ibanLengths[iban[:2]]; !ok || n != len(iban) || !ibanChecksum(iban) {
			continue
		}
		emit(secretAt(RuleIBAN, text, p, end))
		p = end
	}
}

// ibanChecksum computes the IBAN's remainder mod 97 with the first four
// characters moved to the end and letters as 10..35: valid IBANs give 1.
func ibanChecksum(iban string) bool {
	r := 0
	for _, c := range iban[4:] + iban[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = (r*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			r = (r*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return r == 1
}

// ibanStartAt reports two capital letters and two digits at s[p:].
func ibanStartAt(s string, p int) bool {
	return s[p] >= 'A' && s[p] <= 'Z' && s[p+1] >= 'A' && s[p+1] <= 'Z' && s[p+2] >= '0' && s[p+2] <= '9' && s[p+3] >= '0' && s[p+3] <= '9'
}
