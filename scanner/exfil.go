package scanner

import (
	"net/url"
	"regexp"
	"strings"
)

// Output channels: places in text that some viewer will fetch or follow.
var (
	mdImageRE = regexp.MustCompile(`!\[[^\]\n]{0,500}\]\(\s*<?([^)\s>]+)`)
	mdLinkRE  = regexp.MustCompile(`\[[^\]\n]{0,500}\]\(\s*<?([^)\s>]+)`)
	mdRefRE   = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]\n]{1,200}\]:\s*<?(\S+?)>?(?:\s|$)`)
	htmlRE    = regexp.MustCompile(`(?i)<(img|image|iframe|frame|video|audio|source|embed|object|script|link|a|form)\b[^>]{0,1000}?\b(src|href|srcset|poster|data|action)\s*=\s*["']?([^"'\s>]+)`)
	bareURLRE = regexp.MustCompile("(?i)\\bhttps?://[^\\s\"'<>()\\[\\]{}\\\\^`|]+")
)

// autoFetched are HTML elements whose URL a renderer fetches by itself.
var autoFetched = map[string]bool{"img": true, "image": true, "iframe": true, "frame": true, "video": true,
	"audio": true, "source": true, "embed": true, "object": true, "script": true, "link": true}

// exfil finds links in body text that point outside the allowlist and
// carry data (query values, long or high-entropy path segments, user info,
// or one of the secrets found).
func (s *Scanner) exfil(segs []*segment, found []Finding, allowed func(string) bool) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, g := range segs {
		if !g.body || !strings.Contains(g.text, "://") {
			continue
		}
		var spans [][2]int
		report := func(raw, rule string, start, end int) {
			spans = append(spans, [2]int{start, end})
			f, ok := linkFinding(raw, rule, found, allowed)
			if !ok {
				return
			}
			key := f.Rule + "\x00" + g.where + "\x00" + raw
			if seen[key] {
				return
			}
			seen[key] = true
			f.Where, f.Decoding = g.where, g.decoding()
			out = append(out, f)
		}
		for _, m := range mdImageRE.FindAllStringSubmatchIndex(g.text, -1) {
			report(g.text[m[2]:m[3]], RuleExfilImage, m[0], m[1])
		}
		for _, m := range mdLinkRE.FindAllStringSubmatchIndex(g.text, -1) {
			if m[0] > 0 && g.text[m[0]-1] == '!' {
				continue
			}
			report(g.text[m[2]:m[3]], RuleExfilLink, m[0], m[1])
		}
		for _, m := range mdRefRE.FindAllStringSubmatchIndex(g.text, -1) {
			// A reference definition may serve an image: treat it as one.
			report(g.text[m[2]:m[3]], RuleExfilImage, m[0], m[1])
		}
		for _, m := range htmlRE.FindAllStringSubmatchIndex(g.text, -1) {
			rule := RuleExfilLink
			if autoFetched[strings.ToLower(g.text[m[2]:m[3]])] {
				rule = RuleExfilImage
			}
			report(g.text[m[6]:m[7]], rule, m[0], m[1])
		}
		for _, m := range bareURLRE.FindAllStringIndex(g.text, -1) {
			inside := false
			for _, sp := range spans {
				if m[0] >= sp[0] && m[0] < sp[1] {
					inside = true
				}
			}
			if !inside {
				report(strings.TrimRight(g.text[m[0]:m[1]], ".,;:!?*"), RuleExfilLink, m[0], m[1])
			}
		}
	}
	return out
}

// linkFinding reports a link to a foreign host that carries data.
func linkFinding(raw, rule string, found []Finding, allowed func(string) bool) (Finding, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return Finding{}, false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if allowed(host) {
		return Finding{}, false
	}
	why := ""
	switch {
	case u.User != nil:
		why = "user info"
	case hasQueryValue(u):
		why = "query"
	case dataPath(u.EscapedPath()):
		why = "path"
	}
	for _, f := range found {
		if f.secret != "" && strings.Contains(raw, string(f.secret)) {
			why = "secret " + f.Rule
			break
		}
	}
	if why == "" {
		return Finding{}, false
	}
	return Finding{Kind: KindExfilLink, Rule: rule, Host: host, secret: secretText(raw),
		Snippet: u.Scheme + "://" + host + "/… (" + why + ", " + mask(raw) + ")"}, true
}

func hasQueryValue(u *url.URL) bool {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return u.RawQuery != ""
	}
	for _, vs := range q {
		for _, v := range vs {
			if v != "" {
				return true
			}
		}
	}
	return false
}

// dataPath reports a path segment that is long or looks random.
func dataPath(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if d, err := url.PathUnescape(seg); err == nil {
			seg = d
		}
		if len(seg) >= 64 || len(seg) >= 20 && entropy(seg) >= 4.1 {
			return true
		}
	}
	return false
}
