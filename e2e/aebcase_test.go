package e2e

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/net/publicsuffix"

	"github.com/sluice-egress/sluice/rules"
)

// aebCase is one agent-egress-bench case, as far as the runner reads it
// (schemas/case.schema.json of the corpus).
type aebCase struct {
	ID        string   `json:"id"`
	Category  string   `json:"category"`
	InputType string   `json:"input_type"`
	Verdict   string   `json:"expected_verdict"`
	Requires  []string `json:"requires"`
	Tags      []string `json:"capability_tags"`
	Payload   struct {
		Method      string            `json:"method"`
		URL         string            `json:"url"`
		Headers     map[string]string `json:"headers"`
		Body        string            `json:"body"`
		ContentType string            `json:"content_type"`
		Frames      []aebFrame        `json:"frames"`
		Messages    []json.RawMessage `json:"jsonrpc_messages"`
	} `json:"payload"`
}

// aebFrame is one WebSocket frame a websocket_frame case sends.
type aebFrame struct {
	Opcode   string `json:"opcode"` // text, binary, continuation
	Payload  string `json:"payload"`
	Encoding string `json:"encoding"` // "base64": Payload is the frame's bytes in base64
	Fin      *bool  `json:"fin"`      // nil: true
	RSV1     bool   `json:"rsv1"`
}

// aebInputs are the input types an HTTP egress gateway is scored on, and
// aebClaims the runtime prerequisites Sluice meets (the corpus README).
var (
	aebInputs = map[string]bool{"url": true, "request_body": true, "header": true, "websocket_frame": true, "a2a_message": true}
	aebClaims = map[string]bool{"tls_interception": true, "request_body_scanning": true, "header_scanning": true,
		"websocket_frame_scanning": true, "a2a_scanning": true}
)

// aebA2AURL is where a2a_message cases are posted: the corpus gives the
// JSON-RPC messages, not the peer agent's address.
const aebA2AURL = "https://agent.a2a-peer.test/a2a"

// applicable reports whether Sluice is scored on the case.
func (c *aebCase) applicable() bool {
	if !aebInputs[c.InputType] {
		return false
	}
	for _, r := range c.Requires {
		if !aebClaims[r] {
			return false
		}
	}
	return true
}

// target is the URL the case sends to.
func (c *aebCase) target() string {
	if c.InputType == "a2a_message" {
		return aebA2AURL
	}
	return c.Payload.URL
}

// aebCorpus is the corpus directory: $SLUICE_AEB_CORPUS, or the sibling
// ../shared/agent-egress-bench of the repository root.
func aebCorpus() string {
	if d := os.Getenv("SLUICE_AEB_CORPUS"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "agent-egress-bench")
}

// loadAEB reads every case of the corpus, sorted by id.
func loadAEB(t *testing.T, dir string) []*aebCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "cases", "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("agent-egress-bench: no cases under %s (set SLUICE_AEB_CORPUS): %v", dir, err)
	}
	var out []*aebCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := &aebCase{}
		if err := json.Unmarshal(b, c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Verdict != "block" && c.Verdict != "allow" {
			t.Fatalf("%s: expected_verdict %q", f, c.Verdict)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// aebPolicy is the gateway's config for a run: every case host allowed as
// "*." of its registrable domain (so that host-label scanning applies) and
// as that domain itself (blocklisted hosts aside), WebSocket allowed, every name resolved statically
// to the test upstream. Public IP literals are allowed as themselves; those
// in the guard's deny ranges, and spellings no host is (0x7f000001), the
// policy cannot hold: they meet deny-by-default. The bench profile
// blocks prompt injection and random path segments, which alert by default.
func aebPolicy(t *testing.T, cases []*aebCase, upstream string) string {
	t.Helper()
	entries := map[string]bool{}
	hosts := map[string]bool{}
	// Hosts of domain_blocklist cases are the runner's blocklist (their
	// cases say so). An allowlist blocks a host by not allowing it: no
	// wildcard entry may cover one, the other hosts under the same domain
	// are allowed by name instead.
	blocked := map[string]bool{}
	for _, c := range cases {
		if slices.Contains(c.Tags, "domain_blocklist") {
			if u, err := url.Parse(c.target()); err == nil {
				blocked[strings.ToLower(u.Hostname())] = true
			}
		}
	}
	coversBlocked := func(reg string) bool {
		for h := range blocked {
			if h == reg || strings.HasSuffix(h, "."+reg) {
				return true
			}
		}
		return false
	}
	for _, c := range cases {
		u, err := url.Parse(c.target())
		if err != nil || u.Hostname() == "" {
			t.Fatalf("case %s: URL %q: %v", c.ID, c.target(), err)
		}
		h, err := rules.NormalizeHost(u.Hostname())
		if err != nil {
			continue
		}
		if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			// An IP literal is allowed as itself, unless it lies in the
			// guard's deny ranges: the policy refuses to hold those without
			// an explicit allow_addresses, so they meet deny-by-default.
			if !a.IsLoopback() && !a.IsPrivate() && !a.IsLinkLocalUnicast() && !a.IsUnspecified() && !a.Is4In6() {
				entries[h] = true
			}
			continue
		}
		hosts[h] = true
		reg, err := publicsuffix.EffectiveTLDPlusOne(h)
		if err != nil {
			reg = h
		}
		switch {
		case blocked[h]:
		case coversBlocked(reg):
			entries[h] = true
		default:
			entries[reg], entries["*."+reg] = true, true
		}
	}
	var b strings.Builder
	b.WriteString("version: 1\nlisten:\n  proxy: " + proxyAddr + "\ndata_dir: data\nupstream:\n  extra_roots: [upstream-ca.pem]\n  hosts:\n")
	for _, h := range sortedSet(hosts) {
		fmt.Fprintf(&b, "    %q: %s\n", h, upstream)
	}
	b.WriteString("scanning:\n  actions:\n    injection: block\n    url-entropy-path: block\n")
	b.WriteString("tenants:\n  acme:\n    token_file: acme.token\n    classes:\n      agent:\n        allow:\n")
	for _, e := range sortedSet(entries) {
		fmt.Fprintf(&b, "          - host: %q\n            websocket: true\n", e)
	}
	return b.String()
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
