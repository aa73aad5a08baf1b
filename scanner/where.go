package scanner

import (
	"context"
	"net/url"
	"strings"
)

// A finding's location (Where) goes to the log and the incident store, so
// it must never carry a secret: JSON keys, form and query keys, multipart
// names and header names are chosen by the sender and may be the secret
// itself ({"ghp_…":"x"}). safeWhere masks every secret found in the same
// scan and every name that looks like data rather than a name.

// Names that look like data: a run of token bytes this long with letters
// and digits and this much entropy, or any run of dataRunAlways bytes.
const (
	dataRunMin     = 20
	dataRunAlways  = 40
	dataRunEntropy = 3.5
)

func isNameToken(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '_' || c == '~' || c == '%'
}

// safeWhere returns where with secrets and data-like names masked;
// secrets are lowercased and sorted by length.
func safeWhere(where string, secrets []string) string {
	lw := strings.ToLower(where)
	for _, ls := range secrets {
		if len(ls) > len(where) {
			break
		}
		if len(ls) < 6 {
			continue
		}
		// Case-insensitively: header names are canonicalised.
		for i := strings.Index(lw, ls); i >= 0; i = strings.Index(lw, ls) {
			where = where[:i] + "[REDACTED]" + where[i+len(ls):]
			lw = lw[:i] + "[redacted]" + lw[i+len(ls):]
		}
	}
	return maskPieces(maskRuns(where, isNameToken, looksLikeData), secrets)
}

// maskRuns is s with each run of the bytes in says to hide masked.
func maskRuns(s string, in func(byte) bool, hide func(run string) bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if !in(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && in(s[j]) {
			j++
		}
		if hide(s[i:j]) {
			b.WriteString("[REDACTED]")
		} else {
			b.WriteString(s[i:j])
		}
		i = j
	}
	return b.String()
}

// minPiece is the shortest run of a location or of evidence that is
// masked as a piece of a secret: a token sent in pieces (fieldjoin.go) has
// them beside other findings, in query and header names and in snippets'
// context. Shorter, it would mask the 4-character marker a snippet shows.
const minPiece = 5

// maskPieces masks the runs of s that may be pieces of a token (letters,
// digits, '_', '-' and '+': a location's and a snippet's '.', '/' and '='
// join a piece to a name) and are part of one of secrets (lowercased).
func maskPieces(s string, secrets []string) string {
	if len(secrets) == 0 {
		return s
	}
	return maskRuns(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '+' },
		func(run string) bool {
			if len(run) < minPiece {
				return false
			}
			// Pieces may stand in another order than in the secret (headers
			// joined in reverse): any minPieceRun bytes of the run that are
			// in a secret hide it.
			lr := strings.ToLower(run)
			w := min(len(lr), minPieceRun)
			for _, s := range secrets {
				if len(s) < minJoinedLen {
					continue
				}
				for i := 0; i+w <= len(lr); i++ {
					if strings.Contains(s, lr[i:i+w]) {
						return true
					}
				}
			}
			return false
		})
}

// minPieceRun is how many bytes of a run of evidence, in a secret, make
// the run a piece of it: fewer could be a word that both hold.
const minPieceRun = 8

func looksLikeData(run string) bool {
	if len(run) >= dataRunAlways {
		return true
	}
	if len(run) < dataRunMin {
		return false
	}
	letter, digit := false, false
	for i := 0; i < len(run); i++ {
		c := run[i]
		letter = letter || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		digit = digit || c >= '0' && c <= '9'
	}
	return letter && digit && entropy(run) >= dataRunEntropy
}

// dropCovered drops high-entropy URL findings whose value holds a secret
// that has its own finding, and findings in pieces joined that say no
// more than another finding (or that do not look generated).
func dropCovered(found []Finding) []Finding {
	out := found[:0:0]
	for i, f := range found {
		covered := false
		if joinedField(f) {
			// Pieces joined find again what a field held whole (also
			// with the next piece, by a rule of a shape that reads on:
			// an API key's shape around a provider's key), and a run's
			// first pieces what all of it holds, by the same rule. A
			// field's match that a joined one holds is otherwise another
			// matter: the field held a part of it.
			shape := f.Rule == RuleKeyShape || f.Rule == genericRule
			// generic-api-key wants "name = value": joined pieces make
			// one of base64's padding and the next piece, and a token
			// cut into pieces has no name to find. And what pieces join
			// into must look generated (randomRun): a pattern whose tail
			// takes any letters reads a name that starts like a token on
			// into the next word (a GitHub user "xoxa-nyc", then a path
			// segment "Deprecated").
			covered = f.Rule == genericRule || !randomRun(string(f.secret))
			for j, o := range found {
				holds := strings.Contains(string(o.secret), string(f.secret))
				held := o.Rule != f.Rule && shape && strings.Contains(string(f.secret), string(o.secret))
				switch {
				case o.secret == "" || j == i || o.Kind != KindSecret || o.Rule == genericRule && joinedField(o):
				case !joinedField(o):
					covered = covered || holds || held
				default:
					covered = covered || o.Rule == f.Rule && holds && (o.secret != f.secret || j < i) || held
				}
			}
		}
		if f.Rule == RuleURLEntropy {
			for _, o := range found {
				if o.Kind != KindExfilLink && o.secret != "" && strings.Contains(string(f.secret), string(o.secret)) {
					covered = true
				}
			}
		}
		if !covered {
			out = append(out, f)
		}
	}
	return out
}

// joinedField reports a finding in pieces joined: of one request's
// fields, across requests, or of a text's lines.
func joinedField(f Finding) bool {
	return strings.HasSuffix(f.Decoding, encJoinedFields) || strings.HasSuffix(f.Decoding, encJoinedRequests) ||
		strings.HasSuffix(f.Decoding, encFolded)
}

// maxSafePath bounds the path SafePath reads: an incident keeps less.
const maxSafePath = 4096

// SafePath is p (its first maxSafePath bytes) with what the rules find in
// it masked, for the record of a request that was refused before it was
// scanned (a denied host, a body over the limit): the path is evidence,
// and can carry a token that no shape heuristic recognises. A path the
// scan fails on is not kept.
func (s *Scanner) SafePath(ctx context.Context, tenant, p string) string {
	if len(p) > maxSafePath {
		p = p[:maxSafePath]
	}
	res, err := s.Scan(ctx, &Request{Tenant: tenant, URL: &url.URL{Path: p}})
	if err != nil {
		return "/[REDACTED]"
	}
	return res.Path
}

// safePath masks secrets found in the URL out of the path.
func safePath(p string, fs []Finding) string {
	inURL := false
	for _, f := range fs {
		if !strings.HasPrefix(f.Where, "url") || f.secret == "" {
			continue
		}
		if f.Where == "url:path.*" {
			return "/[REDACTED]" // cut across the path's segments: no one of them is the secret
		}
		inURL = true
		p = strings.ReplaceAll(p, string(f.secret), mask(string(f.secret)))
	}
	if inURL && !strings.Contains(p, "[REDACTED") {
		for _, f := range fs {
			if f.Where == "url" && f.Decoding != "" {
				return "/[REDACTED]"
			}
		}
	}
	return p
}
