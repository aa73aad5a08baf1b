package scanner

import (
	"regexp"
	"strings"
)

// injectionRules are phrasings of prompt injection that have no business in
// a message one agent sends another: instructions to drop the recipient's
// instructions, chat-template role markers that forge a system turn, and
// the named jailbreak personas.
var injectionRules = []struct {
	rule string
	re   *regexp.Regexp
}{
	{RuleInjectionOverride, regexp.MustCompile(`(?i)\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?(?:previous|prior|above|earlier|preceding|former|original|system)\s+(?:instructions?|prompts?|directions?|rules|guidelines|directives|messages|context|programming)\b`)},
	{RuleInjectionOverride, regexp.MustCompile(`(?i)\b(?:ignore|disregard|forget)\s+(?:everything|all)\s+(?:you\s+(?:were|have\s+been)\s+told|above|before)\b`)},
	{RuleInjectionOverride, regexp.MustCompile(`(?i)\b(?:reveal|print|output|repeat|show)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|hidden\s+instructions|initial\s+instructions)\b`)},
	{RuleInjectionRole, regexp.MustCompile(`<\|(?:im_start|im_end|system|endoftext|start_header_id|end_header_id|eot_id)\|>|\[/?INST\]|<</?SYS>>`)},
	{RuleInjectionRole, regexp.MustCompile(`(?i)\byou\s+are\s+now\s+(?:in\s+)?(?:developer|dan|god|admin|unrestricted|unfiltered|jailbroken|evil)\b`)},
	{RuleInjectionJailbreak, regexp.MustCompile(`(?i)\bdo\s+anything\s+now\b|\bact\s+as\s+(?:DAN|an?\s+(?:unrestricted|unfiltered|uncensored))\b|\b(?:developer|jailbreak|god)\s+mode\b`)},
}

// agentMessage reports a text from a JSON-RPC request's params: an A2A
// message/send part, an MCP tools/call argument. Chat requests to a model
// carry fetched pages and quoted attacks as a matter of course; those are
// not read for injection.
func agentMessage(g *segment) bool {
	return g.body && strings.Contains(g.where, ".params")
}

// detectInjection reports prompt-injection phrasings, one finding per rule.
func detectInjection(text string, emit func(Finding)) {
	seen := map[string]bool{}
	for _, r := range injectionRules {
		if seen[r.rule] {
			continue
		}
		loc := r.re.FindStringIndex(text)
		if loc == nil {
			continue
		}
		seen[r.rule] = true
		a, b := max(0, loc[0]-24), min(len(text), loc[1]+24)
		emit(Finding{Kind: KindInjection, Rule: r.rule, Snippet: clean(text[a:b])})
	}
}
