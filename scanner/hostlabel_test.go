package scanner

import (
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

func TestScanHost(t *testing.T) {
	s := testScanner(t)
	data := "token=" + randomString(base62, 14)
	b32 := strings.TrimRight(base32.StdEncoding.EncodeToString([]byte(data)), "=")
	aws := MustFake(t, "aws-access-token")
	for _, tc := range []struct {
		name     string
		host     string
		wildcard int
		want     string // rule, "" for none
	}{
		{"hex label", hex.EncodeToString([]byte(data)) + ".x.example.test", 2, RuleExfilHost},
		{"short hex text", hex.EncodeToString([]byte("JohnDoe")) + ".x.example.test", 2, RuleExfilHost},
		{"base32 label", b32 + ".x.example.test", 2, RuleExfilHost},
		{"base64url label, case kept", base64.RawURLEncoding.EncodeToString([]byte(data)) + ".x.example.test", 2, RuleExfilHost},
		{"high entropy", strings.ToLower(randomString(base62, 38)) + "9q.example.test", 1, RuleExfilHost},
		{"many labels", "a1.b2.c3.d4.e5.example.test", 5, RuleExfilHost},
		{"long name", strings.Repeat("abcdefghij-", 5) + "." + strings.Repeat("klmnopqrst-", 5) + ".example.test", 2, RuleExfilHost},
		{"chunked credential prefix", "ghp-ab12.cd34.example.test", 2, RuleExfilHost},
		{"secret across labels", aws[:10] + "." + aws[10:] + ".example.test", 2, "aws-access-token"},
		{"secret in a label", "id-" + aws + ".example.test", 1, "aws-access-token"},
		{"plain label", "api.example.test", 1, ""},
		{"cdn", "cdnjs.example.test", 1, ""},
		{"region", "s3.us-east-1.example.test", 2, ""},
		{"bucket", "my-build-artifacts-2024.s3.example.test", 2, ""},
		{"distribution id", "d111111abcdef8.example.test", 1, ""},
		{"preview", "deploy-preview-42--docs.example.test", 1, ""},
		{"uuid", "550e8400-e29b-41d4-a716-446655440000.example.test", 1, ""},
		{"word", "internationalization.example.test", 1, ""},
		{"exact entry", hex.EncodeToString([]byte(data)) + ".example.test", 0, ""},
		{"ip literal", "192.0.2.10", 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.ScanHost(context.Background(), "", tc.host, tc.wildcard)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings in an ordinary name:%s", dump(res.Findings))
				}
				return
			}
			if !hasRule(res.Findings, tc.want) || res.Verdict != Block {
				t.Fatalf("verdict %v, want %s:%s", res.Verdict, tc.want, dump(res.Findings))
			}
			first := strings.Split(tc.host, ".")[0]
			for _, f := range res.Findings {
				if f.Host == "" || strings.Contains(f.Host, first) || strings.Contains(f.Snippet, first) || strings.Contains(f.String(), first) {
					t.Fatalf("a finding shows the labels: host %q snippet %q", f.Host, f.Snippet)
				}
				if !strings.HasSuffix(f.Host, ".example.test") {
					t.Fatalf("finding host %q lost the fixed suffix", f.Host)
				}
			}
			if tc.want == RuleExfilHost && res.Reason != "exfil-hostname" {
				t.Fatalf("reason %q", res.Reason)
			}
		})
	}
	// The action is the policy's, by rule id.
	s.Policy.Actions = map[string]Action{RuleExfilHost: Alert}
	res, _ := s.ScanHost(context.Background(), "", "a1.b2.c3.d4.e5.example.test", 5)
	if res.Verdict != Alert {
		t.Fatalf("with exfil-hostname: alert, verdict %v", res.Verdict)
	}
}

// Detectors and host scans take any text without panicking.
func FuzzDetectors(f *testing.F) {
	for _, s := range []string{"4111 1111 1111 1111", "GB82WEST12345698765432", "DB_PASSWORD=x", "%252525", "41-4b-49", "sk-test-1", "eyJ.eyJ.", "abandon abandon"} {
		f.Add(s)
	}
	s := &Scanner{Key: []byte("k")}
	f.Fuzz(func(t *testing.T, text string) {
		for _, d := range detectors {
			d.fn(text, func(Finding) {})
		}
		if len(text) < 300 {
			s.ScanHost(context.Background(), "", text+".example.test", strings.Count(text, ".")+1)
		}
	})
}
