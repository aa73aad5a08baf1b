package scanner

import (
	"regexp"
	"strings"
	"unicode"
)

// connRE is a URL with a password in its user info (postgres://u:p@h).
var connRE = regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9+.\-]{1,20})://([^\s:/@"'<>]{1,64}):([^\s@/"'<>]{1,128})@[^\s/"'<>?#:]+`)

// secretWords make a name say secret wherever they stand in it.
var secretWords = map[string]bool{
	"secret": true, "secrets": true, "token": true, "password": true, "passwd": true, "passphrase": true,
	"pwd": true, "credential": true, "credentials": true, "apikey": true, "privatekey": true, "secretkey": true,
	"accesskey": true, "pat": true, "auth": true,
}

// keyQualifiers make a following "key" (or "token") a credential in a
// lower-case name: "api_key" is one, "sort_key" is not.
var keyQualifiers = map[string]bool{
	"api": true, "access": true, "secret": true, "private": true, "signing": true, "master": true,
	"encryption": true, "client": true, "app": true, "auth": true, "account": true, "service": true,
	"refresh": true, "bearer": true, "session": true, "stripe": true, "openai": true, "github": true,
	"slack": true, "aws": true, "license": true, "webhook": true, "deploy": true, "admin": true, "root": true,
}

// notSecretParts make a name not a secret's: a secret's metadata
// (TOKEN_TTL, PASSWORD_FILE) or a token that is no credential (page tokens,
// CSRF tokens that go to their own site).
var notSecretParts = map[string]bool{
	"id": true, "type": true, "name": true, "path": true, "file": true, "dir": true, "url": true, "uri": true,
	"endpoint": true, "length": true, "len": true, "size": true, "count": true, "expiry": true, "expires": true,
	"ttl": true, "timeout": true, "header": true, "hash": true, "algorithm": true, "alg": true, "format": true,
	"kind": true, "mode": true, "policy": true, "field": true, "prefix": true, "hint": true, "env": true,
	"page": true, "next": true, "continuation": true, "cursor": true, "sync": true, "csrf": true, "xsrf": true,
	"nonce": true, "max": true, "min": true, "limit": true, "tokens": true, "required": true, "enabled": true,
	"reset": true, "confirm": true, "confirmation": true, "strength": true, "min_length": true, "rotation": true,
	"version": true, "region": true, "user": true, "username": true, "host": true, "port": true, "location": true,
	"public": true, "pub": true, "publishable": true, "site": true,
}

// detectEnv reports environment and config dumps: assignments whose name
// says secret (NAME=value, name: value) and connection strings with a
// password. Placeholders and references are not secrets, unless they hold
// a generated-looking run (secretValue).
func detectEnv(text string, emit func(Finding)) {
	// Line by line: in source code and configuration most lines hold an
	// '=' or a ':', and finding them first (linesHolding) cost more than
	// reading each line's head, which rejects most lines in a few bytes.
	for ls := 0; ls < len(text); {
		le := len(text)
		if j := strings.IndexByte(text[ls:], '\n'); j >= 0 {
			le = ls + j
		}
		line := text[ls:le]
		ls = le + 1
		name, v, ok := assignment(line)
		if !ok || !mentionsSecret(name) {
			continue
		}
		v = trimValue(v)
		if secretName(name) && secretValue(v) {
			emit(secretFinding(RuleEnvSecret, line, v))
		} else if authorizationName(name) && randomRun(v) {
			emit(secretFinding(RuleEnvSecret, line, credential(v)))
		}
	}
	eachConnWindow(text, func(ws, we int) {
		for _, m := range connRE.FindAllStringSubmatchIndex(text[ws:we], -1) {
			pass := text[ws+m[6] : ws+m[7]]
			if placeholder(pass) && !randomRun(pass) || len(pass) < 3 {
				continue
			}
			emit(secretAt(RuleConnectionString, text, ws+m[0], ws+m[1]))
		}
	})
}

// eachConnWindow calls fn with the windows of text where connRE may
// match, so that the regex does not read a whole large text: a match holds
// one "://" and an '@' after it, and lies in a token of bytes that are not
// connStop; it starts in the run of word, '+', '.' and '-' bytes before
// the token's first "://" (connRE's \b sees the same boundary at the
// window's start as in the whole text, since the byte before the run is
// none of them) and ends with the token. The search starts from the '@'s,
// which are rarer than "://" and far rarer than its ':' (every ":=" of Go
// code, every "key: value").
func eachConnWindow(text string, fn func(ws, we int)) {
	for off := 0; ; {
		i := strings.IndexByte(text[off:], '@')
		if i < 0 {
			return
		}
		ts, te := off+i, off+i+1 // the token around the '@'
		for ts > 0 && !connStop(text[ts-1]) {
			ts--
		}
		for te < len(text) && !connStop(text[te]) {
			te++
		}
		off = te
		p := strings.Index(text[ts:te], "://")
		if p < 0 || strings.IndexByte(text[ts+p+3:te], '@') < 0 {
			continue
		}
		ws := ts + p
		for ws > ts && connSchemeByte(text[ws-1]) {
			ws--
		}
		fn(ws, te)
	}
}

// connStop is a byte that no part of connRE's match after "://" holds.
func connStop(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '"', '\'', '<', '>':
		return true
	}
	return false
}

// connSchemeByte is a scheme byte or a word byte (for \b).
func connSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-' || c == '_'
}

// assignment splits one line of the forms NAME=value, export NAME=value,
// name: value and "name": value (optionally indented): the name, between
// quotes and before blanks if any, ends at the line's first '=' or ':',
// which is at most 84 bytes into it (after the indent). It reads the head
// of the line once and stops at the first byte no such name can hold:
// this runs on every line of a body.
func assignment(line string) (name, value string, ok bool) {
	s := trimBlanksLeft(line)
	s = strings.TrimPrefix(s, "export ")
	head := s[:min(len(s), 85)] // a longer name is no name: do not read a long line
	j := 0
	for j < len(head) && isQuote(head[j]) {
		j++
	}
	from := j
	if j == len(head) || !(head[j] == '_' || isASCIILetter(head[j])) {
		return "", "", false
	}
	for j++; j < len(head) && isNameByte(head[j]); j++ {
	}
	to := j
	for j < len(head) && isQuote(head[j]) {
		j++
	}
	for j < len(head) && (head[j] == ' ' || head[j] == '\t') {
		j++
	}
	if j == len(head) || head[j] != '=' && head[j] != ':' {
		return "", "", false
	}
	v := s[j+1:]
	k := len(v)
	for k > 0 && (v[k-1] == ' ' || v[k-1] == '\t' || v[k-1] == '\r') {
		k--
	}
	return s[from:to], v[:k], true
}

func isQuote(c byte) bool { return c == '"' || c == '\'' }

// isNameByte is a byte of a name after its first.
func isNameByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || isASCIILetter(c) || c >= '0' && c <= '9'
}

func isASCIILetter(c byte) bool { return c|0x20-'a' <= 'z'-'a' }

// trimBlanksLeft is strings.TrimLeft(s, " \t").
func trimBlanksLeft(s string) string {
	k := 0
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	return s[k:]
}

// trimValue strips quotes and a trailing comma from an assigned value.
func trimValue(v string) string {
	v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), ","))
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return v
}

// nameParts splits a name at _ . - and case changes, lower-cased.
func nameParts(name string) []string {
	var parts []string
	var cur []rune
	prevLower := false
	for _, r := range name {
		switch {
		case r == '_' || r == '.' || r == '-':
			if len(cur) > 0 {
				parts = append(parts, string(cur))
			}
			cur, prevLower = nil, false
			continue
		case unicode.IsUpper(r) && prevLower:
			parts = append(parts, string(cur))
			cur = nil
		}
		cur = append(cur, unicode.ToLower(r))
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	if len(cur) > 0 {
		parts = append(parts, string(cur))
	}
	return parts
}

// secretName reports whether a variable or key name says that its value is a
// secret. Upper-case environment names (DB_PASSWORD, STRIPE_KEY) may carry
// the word anywhere; other names must end in it (password, apiKey,
// client_secret), since "key" and "token" mean many things in data.
func secretName(name string) bool {
	if !mentionsSecret(name) {
		return false
	}
	parts := nameParts(name)
	if len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if notSecretParts[p] {
			return false
		}
	}
	env := strings.ToUpper(name) == name && strings.ContainsAny(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	last := parts[len(parts)-1]
	if env {
		for i, p := range parts {
			if secretWords[p] || p == "key" || p == "pass" && i == len(parts)-1 {
				return true
			}
		}
		return false
	}
	prev := ""
	if len(parts) > 1 {
		prev = parts[len(parts)-2]
	}
	switch last {
	case "password", "passwd", "passphrase", "pwd", "secret", "apikey", "privatekey", "secretkey", "accesskey", "credentials", "credential":
		return true
	case "key", "token":
		return keyQualifiers[prev]
	}
	return false
}

// authorizationName reports a name that ends in "authorization", as an
// HTTP header dump or a client's config writes one ("Authorization: Bearer
// …", "proxy_authorization = Basic …"). Its value is a scheme and a
// credential, so it is a secret when it holds a generated-looking run
// ("Authorization: Bearer $TOKEN" or "authorization: required" is none).
func authorizationName(name string) bool {
	parts := nameParts(name)
	return len(parts) > 0 && parts[len(parts)-1] == "authorization"
}

// credential is an authorization value without its scheme ("Bearer ").
func credential(v string) string {
	if i := strings.IndexByte(v, ' '); i > 0 {
		return strings.TrimSpace(v[i+1:])
	}
	return v
}

// mentionsSecret is secretName's cheap first test: the name holds one of
// the words, in any case. One pass that looks at the words starting at
// each byte, rather than a search per word: it runs on every name of a
// body.
func mentionsSecret(name string) bool {
	if len(name) > 96 {
		return false
	}
	for i := 0; i < len(name); i++ {
		var words []string
		switch name[i] | 0x20 { // ASCII letters to lower case; the rest does not matter here
		case 's':
			words = mentionS
		case 't':
			words = mentionT
		case 'p':
			words = mentionP
		case 'c':
			words = mentionC
		case 'k':
			words = mentionK
		case 'a':
			words = mentionA
		default:
			continue
		}
		for _, w := range words {
			if hasPrefixFold(name[i:], w) {
				return true
			}
		}
	}
	return false
}

// The words mentionsSecret looks for ("secret", "token", "pass", "pwd",
// "credential", "key", "auth", "pat"), by first letter.
var (
	mentionS = []string{"secret"}
	mentionT = []string{"token"}
	mentionP = []string{"pass", "pwd", "pat"}
	mentionC = []string{"credential"}
	mentionK = []string{"key"}
	mentionA = []string{"auth"}
)

// hasPrefixFold reports whether s starts with the lower-case word w, with
// s's bytes folded as mentionsSecret folds them (| 0x20).
func hasPrefixFold(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for j := 0; j < len(w); j++ {
		if s[j]|0x20 != w[j] {
			return false
		}
	}
	return true
}

// secretValue reports whether an assigned value could be a secret: long
// enough, one word, neither a placeholder nor a reference, path or flag.
// A value that holds a generated-looking run (randomRun) is one however it
// is dressed, as a reference ("${…}"), a template, a prompt ("my-…") or
// with words after it, unless it is a path: the dress is what a sender who
// wants it out would put on.
func secretValue(v string) bool {
	if len(v) < 6 || len(v) > 4096 {
		return false
	}
	if randomRun(v) && !isPath(v) {
		return true
	}
	if strings.ContainsAny(v, " \t") || placeholder(v) {
		return false
	}
	switch v[0] {
	case '/', '~', '{', '[', '(', '<', '$', '%', '@', '.':
		return false
	}
	if strings.HasPrefix(v, "file:") || strings.HasPrefix(v, "vault:") || strings.HasPrefix(v, "arn:") {
		return false
	}
	digits := true
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			digits = false
		}
	}
	return !(digits && len(v) < 8)
}

// minRandomRun is the shortest run of letters and digits that randomRun
// takes for generated: 16 random base62 characters hold a digit and a
// letter 94 times in 100; a name, even a long one, rarely has a digit.
const minRandomRun = 16

// randomRun reports a run of minRandomRun or more ASCII letters and digits
// that holds both, or a run of minRandomLetters letters alone in both cases
// mixed at random (mixedAtRandom): what a generated secret looks like, and
// what a placeholder, a reference or a name ("${DB_PASSWORD}", "<token>",
// "your-api-key-here", "HTTPSProxyConfigLoader") does not.
func randomRun(v string) bool {
	start, letters, digits := 0, false, false
	for i := 0; i <= len(v); i++ {
		if i < len(v) {
			c := v[i]
			isDigit, isLetter := c >= '0' && c <= '9', c|0x20 >= 'a' && c|0x20 <= 'z'
			if isDigit || isLetter {
				letters, digits = letters || isLetter, digits || isDigit
				continue
			}
		}
		n := i - start
		if n >= minRandomRun && letters && digits || n >= minRandomLetters && !digits && mixedAtRandom(v[start:i]) {
			return true
		}
		start, letters, digits = i+1, false, false
	}
	return false
}

// minRandomLetters is the shortest run of letters alone that randomRun
// reads for its mix of cases.
const minRandomLetters = 20

// mixedAtRandom reports letters whose cases look drawn at random: between
// three and seven in ten upper case, and the case changing at more than a
// third of the steps. Random letters are so 9 times in 10 at 20 (and more
// often the longer); a name in camel case has fewer capitals, and one with
// acronyms ("HTTPSProxyURL") changes case rarely.
func mixedAtRandom(run string) bool {
	upper, changes := 0, 0
	for i := 0; i < len(run); i++ {
		isUpper := run[i] < 'a'
		if isUpper {
			upper++
		}
		if i > 0 && isUpper != (run[i-1] < 'a') {
			changes++
		}
	}
	return upper*10 >= len(run)*3 && upper*10 <= len(run)*7 && changes*3 > len(run)-1
}

// isPath reports a file path: a key file named by its fingerprint is no
// secret.
func isPath(v string) bool {
	return v[0] == '/' || v[0] == '~' || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.HasPrefix(v, "file:")
}

// maxMaskedRest is how many letters and digits a masked value may hold
// besides its runs of x or *: a provider's prefix, a word.
const maxMaskedRest = 10

// masked reports a value (lower-cased) that is masked: runs of six or more
// x or * and at most maxMaskedRest letters and digits besides. A secret
// with such a run added to it ("…xxxxxx") is not masked.
func masked(l string) bool {
	runs, rest := 0, 0
	for i := 0; i < len(l); {
		if c := l[i]; c == 'x' || c == '*' {
			j := i
			for j < len(l) && l[j] == c {
				j++
			}
			if j-i >= 6 {
				runs, i = runs+1, j
				continue
			}
		}
		if c := l[i]; c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			rest++
		}
		i++
	}
	return runs > 0 && rest <= maxMaskedRest
}

// placeholderWords are values that stand in for a secret in examples,
// templates and docs.
var placeholderWords = map[string]bool{
	"changeme": true, "change_me": true, "change-me": true, "changeit": true, "example": true, "placeholder": true,
	"redacted": true, "dummy": true, "sample": true, "test": true, "testing": true, "password": true, "passwd": true,
	"secret": true, "token": true, "apikey": true, "api_key": true, "none": true, "null": true, "nil": true,
	"undefined": true, "todo": true, "tbd": true, "fixme": true, "foo": true, "bar": true, "foobar": true,
	"true": true, "false": true, "pass": true, "yes": true, "no": true, "empty": true, "unset": true,
	"hunter2": true, "default": true, "required": true, "optional": true, "string": true, "value": true,
}

// placeholder reports a stand-in value: a known word, a run of x, * or 0, a
// template reference (${VAR}, {{ var }}, <token>, %(name)s), or a "your_…"
// prompt.
func placeholder(v string) bool {
	l := strings.ToLower(strings.Trim(v, `"'`))
	if l == "" || placeholderWords[l] {
		return true
	}
	if strings.Trim(l, "x*.0#-_•") == "" {
		return true
	}
	if masked(l) { // "ghp_xxxxxxxx", "sk-****…"
		return true
	}
	for _, p := range []string{"${", "$(", "{{", "<", "%(", "%s", "[[", "@@"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	if l[0] == '$' && len(l) > 1 && (l[1] == '_' || l[1] >= 'a' && l[1] <= 'z') {
		return true // $VAR
	}
	for _, p := range []string{"your", "my-", "my_", "enter", "insert", "replace", "put-", "put_", "some-", "some_"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}
