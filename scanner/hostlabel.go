package scanner

import (
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Limits of ordinary names under a wildcard entry: more labels, or longer
// ones, than a CDN, a bucket or a regional endpoint uses.
const (
	maxWildcardLabels = 4
	maxWildcardChars  = 100
)

// labelPrefixRE is the start of a provider credential, as it reads in a
// DNS label once "_" has become "-" or the secret was cut into chunks.
var labelPrefixRE = regexp.MustCompile(`^(?:gh[pousr]|github-pat|glpat|xox[abprs]|npm|hf)[-_]|^(?:akia|asia)[a-z2-7]{4,}`)

// ScanHost looks for data in the labels of host that a "*." policy entry
// matched: the wildcardLabels leftmost labels, which the operator did not
// fix. Exact names (wildcardLabels 0) and IP literals are the operator's
// own and are not scanned. host should be the client's spelling (case
// kept: base64 labels need it). It reports hex, base32 and base64url
// labels, high-entropy labels, secrets within or chunked across labels,
// and unusually many or long labels; the findings' Host is the name with
// the wildcard part masked, safe to record. An error means the name was not
// fully checked: refuse it.
func (s *Scanner) ScanHost(ctx context.Context, tenant, host string, wildcardLabels int) (*Result, error) {
	res := &Result{BodyLen: -1}
	host = strings.TrimSuffix(host, ".")
	if wildcardLabels <= 0 || net.ParseIP(strings.Trim(host, "[]")) != nil {
		return res, nil
	}
	if err := s.init(); err != nil {
		return nil, err
	}
	labels := strings.Split(host, ".")
	wildcardLabels = min(wildcardLabels, len(labels)-1)
	if wildcardLabels <= 0 {
		return res, nil
	}
	wl := labels[:wildcardLabels]
	data := strings.Join(wl, ".")
	// The wildcard part is the evidence and may be the secret: it is masked
	// whole, not even a prefix shown.
	safe := fmt.Sprintf("[REDACTED %d].", len(data)) + strings.Join(labels[wildcardLabels:], ".")

	var found []Finding
	add := func(why string) {
		found = append(found, Finding{Kind: KindExfilHost, Rule: RuleExfilHost, Where: "host", Host: safe,
			secret: secretText(data), Snippet: why + ": " + safe})
	}
	if len(wl) > maxWildcardLabels {
		add(fmt.Sprintf("%d labels under the wildcard", len(wl)))
	} else if len(data) > maxWildcardChars {
		add(fmt.Sprintf("%d characters under the wildcard", len(data)))
	}
	// Texts the secret rules read: each label, the labels joined (a secret
	// cut into chunks) and whatever they decode to.
	texts := []string{data, strings.Join(wl, "")}
	for _, l := range wl {
		why, decoded := labelData(l)
		if why != "" {
			add(why + " label")
		}
		texts = append(texts, l)
		texts = append(texts, decoded...)
	}
	if _, d := labelData(strings.Join(wl, "")); len(d) > 0 {
		texts = append(texts, d...)
	}
	if len(found) == 0 && labelPrefixRE.MatchString(strings.ToLower(wl[0])) {
		add("credential prefix")
	}
	// Only the first heuristic finding is kept: they all hold the same name.
	if len(found) > 1 {
		found = found[:1]
	}
	inner, err := s.scan(ctx, &Request{Tenant: tenant, URL: &url.URL{Path: strings.Join(texts, "\n")}}, false)
	if err != nil {
		return nil, err
	}
	for _, f := range inner.Findings {
		if f.Kind == KindExfilLink || f.Rule == genericRule {
			// URL entropy is not ours to judge here, and the generic
			// keyword rule reads the decoded labels' noise as keys.
			continue
		}
		f.Where, f.Host = "host", safe
		f.Snippet = f.Rule + " in the host name: " + safe
		found = append(found, f)
	}
	s.decide(tenant, "", found, res)
	return res, nil
}

// labelData reports why one label looks like encoded data ("" when it does
// not) and the texts it decodes to.
func labelData(l string) (string, []string) {
	lower := strings.ToLower(l)
	var decoded []string
	why := ""
	if len(l) >= 12 && len(l)%2 == 0 && isHexStr(l) {
		b, _ := hex.DecodeString(l)
		if printableASCII(b) {
			decoded = append(decoded, string(b))
			why = "hex"
		} else if len(l) >= 24 {
			why = "hex"
		}
	}
	if why == "" && len(l) >= 16 {
		if digits, ok := base32Label(lower); ok {
			b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(l[:len(l)/8*8]))
			switch {
			case err != nil || len(b) < 10:
			case printableASCII(b):
				why = "base32"
				decoded = append(decoded, string(b))
			case digits >= 2:
				why = "base32" // binary data: words do not carry base32's digits
			}
		}
	}
	if why == "" && len(l) >= 16 && l != lower && strings.ToUpper(l) != l {
		if b, err := base64.RawURLEncoding.DecodeString(l[:len(l)/4*4]); err == nil && printableASCII(b) && len(b) >= 12 {
			why = "base64url"
			decoded = append(decoded, string(b))
		}
	}
	if why == "" && len(l) >= 20 && strings.Count(l, "-") <= 1 && hasLetterAndDigit(lower) && entropy(lower) >= 3.7 {
		why = "high-entropy"
	}
	return why, decoded
}

// base32Label reports whether a (lower-case) label is all base32
// characters, and how many of the digits 2-7 it holds.
func base32Label(l string) (digits int, ok bool) {
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case c >= '2' && c <= '7':
			digits++
		case c >= 'a' && c <= 'z':
		default:
			return 0, false
		}
	}
	return digits, true
}

func hasLetterAndDigit(s string) bool {
	return strings.ContainsAny(s, "0123456789") && strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz")
}
