package sandboxdns

import (
	"math"
	"strings"
)

// Finding is one reason to believe that a name carries data.
type Finding struct {
	// Rule is the detection rule's id, e.g. "dns-label-hex".
	Rule string
	// Label is the offending label as it appears in the name, so that events can redact
	// it; "" when the finding is about the whole name (which is then redacted but for its
	// last two labels). It is never logged.
	Label string
}

// LabelScanner finds data in a host name. The scanner's host-label detector fits behind it;
// LabelCheck is this package's own.
type LabelScanner interface {
	// ScanName reports the findings in name (lower case, no trailing dot); nil for none.
	ScanName(name string) []Finding
}

// LabelScanners runs each of its scanners and reports all their findings: the scanner's
// detector and LabelCheck together, say.
type LabelScanners []LabelScanner

// ScanName implements LabelScanner.
func (ls LabelScanners) ScanName(name string) []Finding {
	var out []Finding
	for _, l := range ls {
		out = append(out, l.ScanName(name)...)
	}
	return out
}

// Detection rules of LabelCheck.
const (
	RuleLabelLong    = "dns-label-long"
	RuleLabelHex     = "dns-label-hex"
	RuleLabelEntropy = "dns-label-entropy"
	RuleNameLong     = "dns-name-long"
)

// LabelCheck is a LabelScanner built on what DNS tunnels and exfiltration through names look
// like: long labels, hex runs, and dense mixes of letters and digits (base32, base64url) with
// high entropy. Its zero value uses the defaults below.
type LabelCheck struct {
	// MaxLabel is the longest label that is not a finding by length alone; 0 means 48.
	// Tunnels fill labels to the protocol's 63; names people choose rarely pass 40.
	MaxLabel int
	// MaxName is the longest name that is not a finding by length alone; 0 means 160.
	MaxName int
	// MinHex is the shortest label of hex digits (dashes ignored, at least one digit)
	// that is a finding; 0 means 24 (96 bits: a digest, a key, a UUID).
	MinHex int
	// MinEncoded is the shortest label that the entropy test applies to; 0 means 20.
	MinEncoded int
	// MinEntropy is the Shannon entropy in bits per character at or above which a label of
	// MinEncoded or more that switches between letters and digits at least four times is a
	// finding; 0 means 3.6. Random base32 of 20 characters has about 3.9, words and place
	// names about 3.0–3.4.
	MinEntropy float64
}

func (c LabelCheck) maxLabel() int   { return orInt(c.MaxLabel, 48) }
func (c LabelCheck) maxName() int    { return orInt(c.MaxName, 160) }
func (c LabelCheck) minHex() int     { return orInt(c.MinHex, 24) }
func (c LabelCheck) minEncoded() int { return orInt(c.MinEncoded, 20) }
func (c LabelCheck) minEntropy() float64 {
	if c.MinEntropy > 0 {
		return c.MinEntropy
	}
	return 3.6
}

func orInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// ScanName implements LabelScanner.
func (c LabelCheck) ScanName(name string) []Finding {
	var out []Finding
	if len(name) > c.maxName() {
		out = append(out, Finding{Rule: RuleNameLong})
	}
	for label := range strings.SplitSeq(name, ".") {
		if r := c.labelRule(label); r != "" {
			out = append(out, Finding{Rule: r, Label: label})
		}
	}
	return out
}

// labelRule returns the rule a label breaks, "" for none.
func (c LabelCheck) labelRule(l string) string {
	if len(l) > c.maxLabel() {
		return RuleLabelLong
	}
	var digits, letters, hexLetters, dashes, switches int
	prev := byte(0) // 'a' after a letter, '0' after a digit, 0 after anything else
	for i := 0; i < len(l); i++ {
		cls := byte(0)
		switch b := l[i] | 0x20; { // ASCII lower case; digits and '-' do not change
		case '0' <= l[i] && l[i] <= '9':
			digits++
			cls = '0'
		case 'a' <= b && b <= 'f':
			letters++
			hexLetters++
			cls = 'a'
		case 'g' <= b && b <= 'z':
			letters++
			cls = 'a'
		case l[i] == '-':
			dashes++
		}
		if cls != 0 && prev != 0 && cls != prev {
			switches++
		}
		prev = cls
	}
	// Hex: a digest, a key, a UUID, or digits alone; words spelt in a-f have no digits.
	if hexRun := digits + hexLetters; hexRun >= c.minHex() && hexRun+dashes == len(l) && digits > 0 {
		return RuleLabelHex
	}
	// Encoded: base32 or base64url switch between letters and digits every few
	// characters; names people choose do it once or twice ("mirror-02", "v2").
	if len(l) >= c.minEncoded() && switches >= 4 && entropy(l) >= c.minEntropy() {
		return RuleLabelEntropy
	}
	return ""
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// redacted stands in for a label that looks like data.
const redacted = "{redacted}"

// redactName is name as an event or a log line may keep it: every label that a finding named
// or that LabelCheck's defaults flag is replaced, and a name found long as a whole keeps only
// its last two labels. Events are written whatever scanner is plugged in, so the default
// check always applies.
func redactName(name string, findings []Finding) string {
	labels := strings.Split(name, ".")
	bad := map[string]bool{}
	whole := false
	for _, f := range findings {
		if f.Label == "" {
			whole = true
		}
		bad[f.Label] = true
	}
	var def LabelCheck
	for i, l := range labels {
		if bad[l] || def.labelRule(l) != "" {
			labels[i] = redacted
		}
	}
	if whole && len(labels) > 2 {
		labels = append([]string{redacted}, labels[len(labels)-2:]...)
	}
	return strings.Join(labels, ".")
}
