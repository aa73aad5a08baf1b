package scanner

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
)

// keyShapes are credentials known by their provider's prefix, in lengths
// that gitleaks' exact rules do not match (truncated, padded or new
// formats, and the dashed spellings of test keys). A string with such a
// prefix and a random-looking tail is a credential whatever its length.
var keyShapes = []struct {
	marks []string // one of them is in every match: the cheap test first
	re    *regexp.Regexp
	skip  func(v string) bool // a length the specific rule already reports
	// distinctive prefixes need no digits in the tail; "sk-" is also the
	// start of ordinary hyphenated names.
	distinctive bool
}{
	{[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{12,251}\b`), func(v string) bool { return len(v) == 40 }, true},
	{[]string{"sk-"}, regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-|ant-[a-z]{3,5}\d\d-|live-|test-)?[A-Za-z0-9_\-]{16,}`), nil, false},
	{[]string{"k_live_", "k_test_"}, regexp.MustCompile(`\b[rs]k_(?:live|test)_[A-Za-z0-9_]{16,}`), nil, true},
	{[]string{"SG."}, regexp.MustCompile(`\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}`), nil, true},
	{[]string{"glpat-"}, regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{12,}`), nil, true},
	{[]string{"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"}, regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9\-]{10,}`), nil, true},
}

// detectKeyShapes reports credentials by provider prefix.
func detectKeyShapes(text string, emit func(Finding)) {
	for _, k := range keyShapes {
		if !containsAny(text, k.marks...) {
			continue
		}
		for _, m := range k.re.FindAllStringIndex(text, -1) {
			v := text[m[0]:m[1]]
			if k.skip != nil && k.skip(v) || placeholder(v) || !mixedTail(v, !k.distinctive) {
				continue
			}
			emit(secretAt(RuleKeyShape, text, m[0], m[1]))
		}
	}
}

// mixedTail reports whether v has, after its prefix, at least 12 letters
// and digits, more than four distinct ones and, with needDigits, both
// kinds: random keys do; "sk-test-aaaaaaaaaaaa", "ghp_xxxxxxxxxxxx" and
// "sk-some-package-name" do not.
func mixedTail(v string, needDigits bool) bool {
	seen := map[byte]bool{}
	n, letters, digits := 0, 0, 0
	for i := 3; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters++
		default:
			continue
		}
		seen[v[i]] = true
		n++
	}
	return n >= 12 && letters > 0 && (digits > 0 || !needDigits) && len(seen) > 4
}

// jwtRE is a JSON Web Token: two base64url JSON parts and a signature of
// any length (gitleaks' jwt rule wants ten characters of it).
var jwtRE = regexp.MustCompile(`\bey[A-Za-z0-9_\-]{10,}\.ey[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*`)

// detectJWT reports tokens whose header decodes to JSON naming an
// algorithm: a bearer credential, whatever its signature. They are reported
// under gitleaks' "jwt" rule id, so that one action covers both.
func detectJWT(text string, emit func(Finding)) {
	if !strings.Contains(text, "eyJ") {
		return
	}
	for _, m := range jwtRE.FindAllStringIndex(text, -1) {
		v := text[m[0]:m[1]]
		h, err := base64.RawURLEncoding.DecodeString(v[:strings.IndexByte(v, '.')])
		if err != nil || !json.Valid(h) || !bytes.Contains(h, []byte(`"alg"`)) {
			continue
		}
		emit(secretAt(RuleJWT, text, m[0], m[1]))
	}
}
