package config

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"
)

// TestSandboxKeyExchange: left out, the sandbox's key exchange is post-quantum
// (Go's defaults, nil curves); classical hands the gateway a list without any
// ML-KEM; anything else, an empty value included, names its line and key.
func TestSandboxKeyExchange(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
		want                string
		curves              []tls.CurveID
	}{
		{name: "default", yaml: "version: 1\n", want: KeyExchangePostQuantum},
		{name: "post-quantum", yaml: "tls:\n  sandbox_key_exchange: post-quantum\n", want: KeyExchangePostQuantum},
		{name: "classical", yaml: "tls:\n  sandbox_key_exchange: classical\n", want: KeyExchangeClassical,
			curves: []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521}},
		{name: "empty", yaml: "tls:\n  sandbox_key_exchange: \"\"\n",
			wantErr: `sluice.yaml:2: tls.sandbox_key_exchange: got "", want "post-quantum" or "classical"`},
		{name: "a curve's name", yaml: "tls:\n  sandbox_key_exchange: X25519\n",
			wantErr: `sluice.yaml:2: tls.sandbox_key_exchange: got "X25519"`},
		{name: "not a string", yaml: "tls:\n  sandbox_key_exchange: [classical]\n",
			wantErr: `sluice.yaml:2: tls.sandbox_key_exchange`},
		{name: "unknown key", yaml: "tls:\n  min_version: \"1.3\"\n",
			wantErr: `sluice.yaml:2: tls.min_version: unknown key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), "sluice.yaml")
			if err == nil {
				err = c.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.TLS.SandboxKeyExchange != tc.want {
				t.Errorf("sandbox_key_exchange = %q, want %q", c.TLS.SandboxKeyExchange, tc.want)
			}
			got := c.TLS.SandboxCurves()
			if !slices.Equal(got, tc.curves) {
				t.Errorf("SandboxCurves = %v, want %v", got, tc.curves)
			}
			if slices.ContainsFunc(got, isMLKEM) {
				t.Errorf("SandboxCurves = %v: a post-quantum key exchange in a list meant to be classical", got)
			}
		})
	}
	if got := Default().TLS.SandboxKeyExchange; got != KeyExchangePostQuantum {
		t.Errorf("the embedded default's sandbox_key_exchange = %q, want %q", got, KeyExchangePostQuantum)
	}
}

func isMLKEM(id tls.CurveID) bool {
	return id == tls.X25519MLKEM768 || id == tls.SecP256r1MLKEM768 || id == tls.SecP384r1MLKEM1024
}
