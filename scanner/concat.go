package scanner

// A token cut into string literals that code joins ("ghp_AbCd" + "EfGh…",
// Python's "ghp_AbCd" "EfGh…", PHP's ., SQL's ||) is whole in no literal:
// code pushed to the repository's remote or posted to an allowed API
// carries it so. The engine notes a keyword that a literal ends soon after
// and another literal joins (quotedBeforeJoin), and for such a text the
// joined literals are matched too (joinedLiterals).

// encJoined names the layer of joined literals.
const encJoined = "joined-literals"

// Bounds of what is read as a literal and between two joined ones.
const (
	maxLiteral    = 256 // a literal's bytes
	maxTokenAfter = 96  // token bytes from a keyword to its literal's end
	maxJoinGap    = 32  // bytes of an operator and white space between literals
)

func isLiteralQuote(c byte) bool { return c == '"' || c == '\'' || c == '`' }

// quotedBeforeJoin reports whether a keyword that ends at end in s is in a
// literal that another one joins (token bytes, its closing quote, and a
// join to the next literal), or is a name given such literals
// (token = "gh" + "p_…").
func quotedBeforeJoin(s string, end int) bool {
	k := end
	for k < len(s) && k-end < maxTokenAfter && (isWordByte(s[k]) || s[k] == '-') {
		k++
	}
	if k < len(s) && isLiteralQuote(s[k]) && nextLiteral(s, k+1) >= 0 {
		return true
	}
	for k = end; k < len(s) && k-end < 8 && (s[k] == ' ' || s[k] == '\t' || s[k] == '=' || s[k] == ':' || s[k] == '('); k++ {
	}
	if k == end || k >= len(s) || !isLiteralQuote(s[k]) {
		return false
	}
	_, close, ok := literalAt(s, k)
	return ok && nextLiteral(s, close+1) >= 0
}

// nextLiteral is where the literal joined to one that closed just before
// from starts (its opening quote), -1 when none is: white space, at most
// one operator (+, ., .., ||, &, or none: adjacent literals are joined in
// Python and C), white space and line breaks (a backslash before one too),
// then a quote.
func nextLiteral(s string, from int) int {
	k := from
	space := func() {
		for k < len(s) && k-from < maxJoinGap && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r' || s[k] == '\\') {
			k++
		}
	}
	space()
	for _, op := range []string{"||", "..", "+", ".", "&"} {
		if len(s)-k >= len(op) && s[k:k+len(op)] == op {
			k += len(op)
			break
		}
	}
	space()
	if k < len(s) && k-from <= maxJoinGap && isLiteralQuote(s[k]) {
		return k
	}
	return -1
}

// literalAt reads the literal whose opening quote is s[i]: its contents
// and the index of its closing quote; ok is false when it does not close
// on its line within maxLiteral bytes.
func literalAt(s string, i int) (string, int, bool) {
	q := s[i]
	for k := i + 1; k < len(s) && k-i <= maxLiteral; k++ {
		switch s[k] {
		case q:
			if s[k-1] != '\\' {
				return s[i+1 : k], k, true
			}
		case '\n':
			return "", 0, false
		}
	}
	return "", 0, false
}

// joinedLiterals is every run of two or more literals in s that code joins,
// each run's contents joined, one run per line; ok is false for none.
func joinedLiterals(s string) (string, bool) {
	var out []byte
	for i := 0; i < len(s); i++ {
		if !isLiteralQuote(s[i]) {
			continue
		}
		first, end, ok := literalAt(s, i)
		if !ok {
			continue
		}
		run, n := []byte(first), 1
		for {
			j := nextLiteral(s, end+1)
			if j < 0 {
				break
			}
			piece, e, ok := literalAt(s, j)
			if !ok {
				break
			}
			run, n, end = append(run, piece...), n+1, e
		}
		if n >= 2 {
			out = append(append(out, run...), '\n')
		}
		i = end
	}
	return ownString(out), len(out) > 0
}
