package scanner

import (
	"fmt"
	"net/http"
	"strings"

	hostmatch "github.com/sluice-egress/sluice/rules/match"
)

// Action is what the gateway does with a finding.
type Action int

const (
	// Pass: nothing to do (a bound credential at its own destination).
	Pass Action = iota
	// Alert: forward unchanged, record an incident.
	Alert
	// Redact: replace the secret before forwarding, record an incident.
	Redact
	// Block: refuse the request, forward nothing, record an incident.
	Block
)

// String returns "pass", "alert", "redact" or "block".
func (a Action) String() string {
	switch a {
	case Pass:
		return "pass"
	case Alert:
		return "alert"
	case Redact:
		return "redact"
	case Block:
		return "block"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// ParseAction reads "block", "redact", "alert" or "pass".
func ParseAction(s string) (Action, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "block":
		return Block, nil
	case "redact":
		return Redact, nil
	case "alert":
		return Alert, nil
	case "pass":
		return Pass, nil
	}
	return Pass, fmt.Errorf("unknown action %q (want block, redact or alert)", s)
}

// UnmarshalText reads "block", "redact" or "alert", exactly: the actions a config may
// give a rule (Pass is for bound credentials, never configured).
func (a *Action) UnmarshalText(b []byte) error {
	switch string(b) {
	case "block":
		*a = Block
	case "redact":
		*a = Redact
	case "alert":
		*a = Alert
	default:
		return fmt.Errorf("got %q, want %q, %q or %q", b, Block, Redact, Alert)
	}
	return nil
}

// Kinds of finding, as in gateway events.
const (
	KindSecret    = "secret"
	KindExfilLink = "exfil-link"
	KindCanary    = "canary"
	KindOversize  = "oversize"
)

// Rule ids of Sluice's own detectors (besides the gitleaks rules).
const (
	RuleExfilImage   = "exfil-image"       // markdown or HTML image to a foreign host, carrying data
	RuleExfilLink    = "exfil-link"        // link, iframe or bare URL to a foreign host, carrying data
	RuleURLEntropy   = "url-entropy-query" // high-entropy query value in the request URL itself
	RuleCanary       = "canary"
	RuleOversize     = "oversize"
	RuleDecompressed = "decompression-limit"
)

// Binding ties a credential to the destinations where it belongs: there, in
// one of Headers, it passes without a finding; anywhere else it is one.
type Binding struct {
	// Rule is the detection rule id whose secrets are bound ("github-pat").
	Rule string `yaml:"rule"`
	// Hosts are exact hosts or "*.suffix" patterns, matched as the policy matches
	// entry hosts (hostmatch.Host); one that does not parse binds nothing.
	Hosts []string `yaml:"hosts"`
	// Headers where the credential may travel; empty: Authorization.
	Headers []string `yaml:"headers"`
}

func (b Binding) matches(rule, header, host string) bool {
	if b.Rule != rule {
		return false
	}
	hs := b.Headers
	if len(hs) == 0 {
		hs = []string{"Authorization"}
	}
	okHeader := false
	for _, h := range hs {
		if http.CanonicalHeaderKey(h) == http.CanonicalHeaderKey(header) {
			okHeader = true
		}
	}
	if !okHeader {
		return false
	}
	for _, p := range b.Hosts {
		if hostmatch.Host(p, host) {
			return true
		}
	}
	return false
}

// DefaultBindings are the shipped bindings of common providers' credentials
// to their own APIs (and, for GitHub and GitLab, their git hosts).
func DefaultBindings() []Binding {
	gh := []string{"github.com", "api.github.com", "uploads.github.com", "codeload.github.com"}
	gl := []string{"gitlab.com"}
	var out []Binding
	for _, r := range []string{"github-pat", "github-fine-grained-pat", "github-oauth", "github-app-token", "github-refresh-token"} {
		out = append(out, Binding{Rule: r, Hosts: gh})
	}
	for _, r := range []string{"gitlab-pat", "gitlab-pat-routable", "gitlab-ptt", "gitlab-deploy-token", "gitlab-cicd-job-token"} {
		out = append(out, Binding{Rule: r, Hosts: gl, Headers: []string{"Authorization", "Private-Token", "Job-Token"}})
	}
	return append(out,
		Binding{Rule: "openai-api-key", Hosts: []string{"api.openai.com"}},
		Binding{Rule: "anthropic-api-key", Hosts: []string{"api.anthropic.com"}, Headers: []string{"X-Api-Key", "Authorization"}},
		Binding{Rule: "gcp-api-key", Hosts: []string{"*.googleapis.com"}, Headers: []string{"X-Goog-Api-Key"}},
		Binding{Rule: "huggingface-access-token", Hosts: []string{"huggingface.co", "api-inference.huggingface.co"}},
		Binding{Rule: "cohere-api-token", Hosts: []string{"api.cohere.com", "api.cohere.ai"}},
		Binding{Rule: "stripe-access-token", Hosts: []string{"api.stripe.com"}},
		Binding{Rule: "sendgrid-api-token", Hosts: []string{"api.sendgrid.com"}},
		Binding{Rule: "slack-bot-token", Hosts: []string{"slack.com"}},
		Binding{Rule: "slack-user-token", Hosts: []string{"slack.com"}},
	)
}

// Policy turns findings into actions. Its zero value blocks every secret,
// blocks exfiltration images, alerts on links and high-entropy URLs, and
// applies DefaultBindings.
type Policy struct {
	// Actions by rule id, or "secret" for every secret rule without its own
	// entry; they override a rule pack's default. Canaries always block.
	Actions map[string]Action
	// Bindings are added to DefaultBindings (unless NoDefaultBindings).
	Bindings []Binding
	// NoDefaultBindings drops DefaultBindings.
	NoDefaultBindings bool
	// Tenants holds per-tenant overrides: their Actions win, their Bindings add.
	Tenants map[string]TenantPolicy
	// ForwardOversize forwards bodies larger than the limit unscanned (with an
	// alert) instead of blocking them.
	ForwardOversize bool
}

// TenantPolicy is one tenant's overrides.
type TenantPolicy struct {
	// Actions by rule id win over the policy's.
	Actions map[string]Action `yaml:"actions"`
	// Bindings are added to the policy's.
	Bindings []Binding `yaml:"bindings"`
}

// bound reports whether the finding is a credential at its own destination.
func (p *Policy) bound(tenant, host string, f *Finding) bool {
	if f.Kind != KindSecret || f.header == "" || f.Decoding != "" {
		return false
	}
	lists := [][]Binding{p.Bindings, p.Tenants[tenant].Bindings}
	if !p.NoDefaultBindings {
		lists = append(lists, DefaultBindings())
	}
	for _, l := range lists {
		for _, b := range l {
			if b.matches(f.Rule, f.header, host) {
				return true
			}
		}
	}
	return false
}

// action decides a finding's action: canaries block; then the tenant's
// actions, the policy's, the rule pack's, the kind's default. Phantoms
// outside their place block too.
func (p *Policy) action(tenant string, packs map[string]Action, f *Finding) Action {
	if f.Kind == KindCanary || f.Kind == KindPhantom {
		return Block
	}
	for _, m := range []map[string]Action{p.Tenants[tenant].Actions, p.Actions, packs} {
		if a, ok := m[f.Rule]; ok {
			return a
		}
		if a, ok := m[f.Kind]; ok && (f.Kind == KindSecret || f.Kind == KindInjection) {
			return a
		}
	}
	if a, ok := detectorDefaults[f.Rule]; ok {
		return a
	}
	switch f.Rule {
	case RuleExfilImage:
		return Block
	case RuleExfilLink, RuleURLEntropy:
		return Alert
	case RuleOversize:
		if p.ForwardOversize {
			return Alert
		}
		return Block
	}
	return Block
}
