package scanner

import (
	"slices"
	"strings"
)

// Kinds and rule ids of Sluice's own detectors. Every rule id is its own
// entry in Policy.Actions (scanning.actions); KindInjection also names the
// whole prompt-injection family there.
const (
	// KindInjection is prompt-injection text in an outbound agent-to-agent
	// message: recorded (alert) by default, not refused.
	KindInjection = "injection"
	// KindExfilHost is data carried in the labels of the destination host.
	KindExfilHost = "exfil-hostname"

	RulePaymentCard      = "payment-card"                // Luhn-valid number with an issuer's prefix and length
	RuleIBAN             = "iban"                        // country length and mod-97 check
	RuleWIF              = "crypto-wif-private-key"      // base58check WIF private key
	RuleXPRV             = "crypto-extended-private-key" // BIP-32 xprv/tprv (and y/z/u/v variants)
	RuleMnemonic         = "crypto-mnemonic"             // BIP-39 English phrase with a valid checksum
	RuleHexPrivateKey    = "crypto-hex-private-key"      // 64 hex digits beside a private-key word
	RuleCryptoAddress    = "crypto-address"              // BTC base58check/bech32 or Ethereum address
	RuleEnvSecret        = "env-secret"                  // NAME=value where the name says secret
	RuleConnectionString = "connection-string-password"  // scheme://user:password@host
	RuleKeyShape         = "api-key-shape"               // a provider prefix (ghp_, sk-, SG.) gitleaks' exact lengths miss
	RuleJWT              = "jwt"                         // gitleaks' id: a JWT with a short or missing signature
	RuleAWSSecretEncoded = "aws-secret-key-encoded"      // an AWS secret key's shape behind hex or base64 (awssecret.go)
	RuleURLEntropyPath   = "url-entropy-path"            // random-looking segment in the request path
	RuleMultiEncoded     = "encoding-evasion"            // three or more layers of percent-encoding, delimited hex text
	RuleExfilHost        = "exfil-hostname"              // data in wildcard-matched host labels

	RuleInjectionOverride  = "prompt-injection-override"  // "ignore all previous instructions"
	RuleInjectionRole      = "prompt-injection-role"      // chat-template role markers, "you are now"
	RuleInjectionJailbreak = "prompt-injection-jailbreak" // DAN, developer mode
)

// detectorDefaults are the default actions of the own detectors whose
// default is not Block (the kind default).
var detectorDefaults = map[string]Action{
	RuleURLEntropyPath:     Alert,
	RuleInjectionOverride:  Alert,
	RuleInjectionRole:      Alert,
	RuleInjectionJailbreak: Alert,
}

// detector is one of Sluice's own detectors: fn reads one decoded text and
// emits what it finds (Kind, Rule, secret and Snippet set; where and
// decoding are filled in from the text's origin). applies, when set, limits
// it to some texts.
type detector struct {
	name    string
	needs   uint32 // features (prefilter.go) of which a text must hold one; 0: any text
	applies func(g *segment) bool
	fn      func(text string, emit func(Finding))
	// inSpans, when set, is what detect runs in place of fn: it reads only
	// the spans of the text that spans picks from featureScan's marks.
	inSpans func(text string, spans [][2]int, emit func(Finding))
	spans   func(m *featureMarks) [][2]int
}

// detectors run over every segment, after the rule engine.
var detectors = []detector{
	{name: "cards", needs: fCardDigits, applies: unjoined, fn: detectCards},
	{name: "iban", needs: fIBAN, applies: unjoined, fn: detectIBAN},
	{name: "crypto-base58", needs: fBase58, fn: detectBase58Keys, inSpans: detectBase58KeysIn,
		spans: func(m *featureMarks) [][2]int { return m.words58 }},
	{name: "crypto-bech32", needs: fBech32, fn: detectBech32},
	{name: "crypto-eth", needs: fEth, applies: unjoined, fn: detectEthAddress},
	{name: "crypto-hex-key", needs: fLongRun, applies: unjoined, fn: detectHexKey},
	{name: "mnemonic", needs: fWords, fn: detectMnemonic, inSpans: detectMnemonicIn,
		spans: func(m *featureMarks) [][2]int { return m.phrases }},
	{name: "env", needs: fAssign, applies: func(g *segment) bool { return g.body && unjoined(g) }, fn: detectEnv},
	{name: "keyshape", needs: fKeyShape, fn: detectKeyShapes},
	{name: "jwt", needs: fJWT, fn: detectJWT},
	{name: "path-entropy", applies: func(g *segment) bool { return g.where == "url" && g.depth == 0 }, fn: detectPathEntropy},
	{name: "evasion", needs: fPercent | fDelimHex, applies: func(g *segment) bool { return g.depth == 0 }, fn: detectEvasion},
	{name: "injection", applies: agentMessage, fn: detectInjection},
	{name: "aws-secret-encoded", applies: inEncodedLayer, fn: detectAWSSecretEncoded},
	// A hex run long enough to hold a key is a long base64-alphabet run.
	{name: "aws-secret-in-hex", needs: fLongRun, applies: func(g *segment) bool { return g.depth == 0 }, fn: detectAWSSecretInHex},
}

// unjoined reports a segment that is not pieces joined (fieldjoin.go,
// trail.go; its spans are lines of their own, not to be folded again):
// numbers, hex and NAME=value lines that the detectors without a checksum
// or a provider's prefix read as secrets are made by joining ordinary ids
// and hashes (?user=41234&item=98765432 joins into a number that passes
// Luhn for a Visa card).
func unjoined(g *segment) bool {
	return !slices.ContainsFunc(g.chain, func(enc string) bool {
		return enc == encJoinedFields || enc == encJoinedRequests || enc == encFolded
	})
}

// detect runs the own detectors over the segments. A secret that a finding
// of the rule engine already holds in the same place is left to that
// finding: its rule is the more specific one (and may be bound). d is kept
// from one segment group to the next (newDetectRun): detect runs once per
// JSON string, and its state and emit function allocated each time were
// half the allocations of a chat body's scan.
func (s *Scanner) detect(d *detectRun, segs []*segment, found []Finding) []Finding {
	d.reset()
	for _, o := range found {
		if o.secret != "" && o.Rule != genericRule {
			if d.byWhere == nil {
				d.byWhere = map[string][]string{}
			}
			d.byWhere[o.Where] = append(d.byWhere[o.Where], string(o.secret))
		}
	}
	for _, d.g = range segs {
		g := d.g
		m := g.features()
		for _, det := range detectors {
			if det.needs != 0 && m.f&det.needs == 0 || det.applies != nil && !det.applies(g) {
				continue
			}
			if det.inSpans != nil {
				det.inSpans(g.text, det.spans(m), d.emit)
			} else {
				det.fn(g.text, d.emit)
			}
		}
	}
	d.g = nil
	return d.out
}

// detectRun is detect's state: made once per scan, reset for each
// segment group.
type detectRun struct {
	byWhere map[string][]string // the rule engine's secrets by place; nil until needed
	seen    map[string]bool     // findings emitted; nil until needed
	out     []Finding           // what detect returns, valid until its next call
	g       *segment            // the segment being read, for emit
	emit    func(Finding)       // add, made once
}

func newDetectRun() *detectRun {
	d := &detectRun{}
	d.emit = d.add
	return d
}

// reset empties d for the next group; maps that grew large are dropped,
// as clearing costs their capacity on every group after.
func (d *detectRun) reset() {
	if len(d.byWhere) > 64 {
		d.byWhere = nil
	}
	if len(d.seen) > 64 {
		d.seen = nil
	}
	if cap(d.out) > 256 {
		d.out = nil
	}
	clear(d.byWhere)
	clear(d.seen)
	d.out = d.out[:0]
}

// add is emit: it fills in where and decoding from the segment read.
func (d *detectRun) add(f Finding) {
	g := d.g
	f.Where, f.Decoding, f.header = g.where, g.decoding(), g.header
	if covered(string(f.secret), d.byWhere[f.Where]) {
		return
	}
	key := f.Rule + "\x00" + f.Where + "\x00" + f.Decoding + "\x00" + string(f.secret)
	if d.seen[key] {
		return
	}
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	d.seen[key] = true
	d.out = append(d.out, f)
}

// genericRule is gitleaks' catch-all keyword rule: it alerts by default,
// so it does not stand in for a specific detector's finding.
const genericRule = "generic-api-key"

// covered reports whether one of the secrets holds secret or is held by it.
func covered(secret string, secrets []string) bool {
	if secret == "" {
		return false
	}
	for _, o := range secrets {
		if strings.Contains(o, secret) || strings.Contains(secret, o) {
			return true
		}
	}
	return false
}

// secretFinding is a KindSecret finding of rule for value within text.
func secretFinding(rule, text, value string) Finding {
	return Finding{Kind: KindSecret, Rule: rule, secret: secretText(value),
		Snippet: strings.TrimSpace(snippet(text, value))}
}

// secretAt is a KindSecret finding of rule for text[start:end], its
// snippet cut from around it without searching the text again.
func secretAt(rule, text string, start, end int) Finding {
	a, b := max(0, start-snippetContext), min(len(text), end+snippetContext)
	return secretFinding(rule, text[a:b], text[start:end])
}

// snippetContext is how much text around a secret a snippet shows, as
// snippet does.
const snippetContext = 24
