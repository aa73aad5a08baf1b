package config

import "crypto/tls"

// Values of tls.sandbox_key_exchange.
const (
	// KeyExchangePostQuantum agrees on the hybrid X25519MLKEM768 with every
	// client that offers it, on a classical one with the others.
	KeyExchangePostQuantum = "post-quantum"
	// KeyExchangeClassical agrees on X25519 (or P-256, P-384, P-521) with
	// every client, whatever else it offers.
	KeyExchangeClassical = "classical"
)

// TLS configures the TLS the gateway terminates for sandboxes (the tls: section).
// Upstream TLS is not configured here: it keeps Go's defaults, post-quantum.
type TLS struct {
	// SandboxKeyExchange is the key exchange of the TLS between a sandbox and
	// the gateway (inspected tunnels, refusals in TLS, sluice.internal):
	// KeyExchangePostQuantum (the default) or KeyExchangeClassical, which takes
	// about a sixth of the gateway's CPU per new connection off but leaves
	// that hop open to a recording decrypted later by a quantum computer (see
	// docs/security.md). A reload does not apply it.
	SandboxKeyExchange string `yaml:"sandbox_key_exchange"`
}

// SandboxCurves returns the key exchanges the gateway may agree on with
// sandboxes, for gateway.Gateway.SandboxCurves: nil (Go's defaults,
// X25519MLKEM768 first) unless the key exchange is classical.
func (t TLS) SandboxCurves() []tls.CurveID {
	if t.SandboxKeyExchange == KeyExchangeClassical {
		return []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521}
	}
	return nil
}

func (v *validator) tls() {
	switch k := v.c.TLS.SandboxKeyExchange; k {
	case KeyExchangePostQuantum, KeyExchangeClassical:
	default:
		v.fail("tls.sandbox_key_exchange", "got %q, want %q or %q", k, KeyExchangePostQuantum, KeyExchangeClassical)
	}
}
