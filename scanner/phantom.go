package scanner

import (
	"slices"
	"strings"
)

// KindPhantom is the kind of a finding of a phantom credential outside its
// bound place; RulePhantom prefixes its rule ("phantom-misuse:github").
const (
	KindPhantom = "phantom"
	RulePhantom = "phantom-misuse"
)

// PhantomSet recognises phantom credentials (stand-ins the sandbox holds for
// real secrets) by keyed fingerprint. *phantom.Registry implements it.
type PhantomSet interface {
	// Phantom returns the credential's name when fp is the fingerprint of a phantom.
	Phantom(fp string) (name string, ok bool)
	// Lengths are the lengths of the phantoms; empty: there are none. It is
	// called once at the start of each scan, before Phantom.
	Lengths() map[int]bool
}

// withPhantoms adds a phantom-misuse finding for every phantom found outside
// the place req.PhantomAllowed accepts, and drops the secret findings that
// were phantoms (wherever they were): a phantom is reported once, as a phantom.
// lengths are the scan's s.Phantoms.Lengths().
func (s *Scanner) withPhantoms(req *Request, segs []*segment, found []Finding, lengths map[int]bool) []Finding {
	if s.Phantoms == nil || len(lengths) == 0 {
		return found
	}
	var out []Finding
	var tokens []string // phantom values seen, to drop secret findings holding one
	seen := map[string]bool{}
	check := func(g *segment, tok string) {
		fp := fingerprint(s.Key, tok)
		name, ok := s.Phantoms.Phantom(fp)
		if !ok {
			return
		}
		tokens = append(tokens, tok)
		if slices.Contains(g.chain, encJoinedFields) {
			// Swapped only whole in its place, a phantom cut into fields
			// carries nothing real; and one in its place is in the pieces.
			return
		}
		key := fp + "\x00" + g.where + "\x00" + g.decoding()
		if seen[key] {
			return
		}
		seen[key] = true
		if req != nil && req.PhantomAllowed != nil && req.PhantomAllowed(fp, g.where, g.decoding()) {
			return
		}
		out = append(out, Finding{Kind: KindPhantom, Rule: RulePhantom + ":" + name, Where: g.where, Decoding: g.decoding(),
			Snippet: snippet(g.text, tok), Fingerprint: fp, secret: secretText(tok), header: g.header})
	}
	eachCandidate(segs, found, lengths, check)
	if len(tokens) == 0 {
		return found
	}
	kept := found[:0:0]
	for _, f := range found {
		isPhantom := false
		for _, tok := range tokens {
			if f.secret != "" && strings.Contains(string(f.secret), tok) {
				isPhantom = true
				break
			}
		}
		if !isPhantom {
			kept = append(kept, f)
		}
	}
	return append(kept, out...)
}
