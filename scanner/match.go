package scanner

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// plainCopy is f as if it had not been base64-encoded: Basic credentials
// whose password is a bound token (git over HTTPS sends a GitHub token as
// base64("x-access-token:" + token)) are bound like the token itself.
func plainCopy(f *Finding) *Finding {
	c := *f
	c.Decoding = ""
	return &c
}

// basicTokenUser is the user name git clients send with a token as the
// password of Basic credentials.
const basicTokenUser = "x-access-token"

// basicPassword reports whether a segment is the decoded credential of a
// "Basic" header value and is "x-access-token:" + secret exactly.
func basicPassword(seg *segment, secret string) bool {
	if !seg.basic {
		return false
	}
	user, pass, ok := strings.Cut(seg.text, ":")
	return ok && pass == secret && user == basicTokenUser
}

// match runs the rules over the segments, each segment whole: the engine
// windows the regexes itself, so a secret is never cut by a batch border.
// A segment whose literals code joins is matched joined too (concat.go).
func (s *Scanner) match(ctx context.Context, segs []*segment) ([]Finding, error) {
	var out []Finding
	seen := map[string]bool{}
	own := false // segs is an array of match's own
	for i := 0; i < len(segs); i++ {
		seg := segs[i]
		t := seg.text
		line, counted := seg.line, 0
		joins, folds, err := s.Rules.eng.detectJoins(ctx, t, func(m match) {
			f := Finding{Kind: KindSecret, Rule: s.Rules.eng.rules[m.rule].cfg.RuleID, Where: seg.where,
				Decoding: seg.decoding(), secret: secretText(m.secret), header: seg.header,
				Snippet: strings.TrimSpace(snippet(m.line, m.secret)), basic: basicPassword(seg, m.secret)}
			if seg.line > 0 && seg.depth == 0 && m.start >= counted {
				line += strings.Count(t[counted:m.start], "\n")
				counted = m.start
				f.Line = line
			}
			key := f.Rule + "\x00" + f.Where + "\x00" + f.Decoding + "\x00" + string(f.secret)
			if seen[key] {
				return
			}
			seen[key] = true
			out = append(out, f)
		})
		if err != nil {
			return nil, ErrTimeout
		}
		more := func(enc, text string) {
			if !own {
				segs, own = slices.Clip(segs), true // the caller's array stays as it is
			}
			segs = append(segs, &segment{where: seg.where, chain: append(slices.Clone(seg.chain), enc),
				text: text, header: seg.header, body: seg.body, depth: seg.depth + 1})
		}
		if joins && !slices.Contains(seg.chain, encJoined) {
			if j, ok := joinedLiterals(t); ok {
				more(encJoined, j)
			}
		}
		if len(folds) > 0 && unjoined(seg) {
			if j := s.foldedLines(t, folds); j != "" {
				more(encFolded, j)
			}
		}
	}
	return out, nil
}

// snippet shows a little context around the secret with the secret masked.
func snippet(text, secret string) string {
	i := strings.Index(text, secret)
	if i < 0 || secret == "" {
		return mask(secret)
	}
	const ctxLen = 24
	a := max(0, i-ctxLen)
	b := min(len(text), i+len(secret)+ctxLen)
	before, after := clean(text[a:i]), clean(text[i+len(secret):b])
	return before + mask(secret) + after
}

// mask shows at most a 4-character prefix of a long secret (a format's
// marker such as "ghp_" or "AKIA"), never enough to use or guess it.
func mask(secret string) string {
	p := ""
	if len(secret) >= 20 {
		p = secret[:4]
	}
	return fmt.Sprintf("%s[REDACTED %d]", p, len(secret))
}

// clean keeps printable ASCII of context text (no newlines, no control bytes).
func clean(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c >= 0x7f {
			b[i] = ' '
		}
	}
	return string(b)
}
