// Package probetag is the contract between `sluice doctor` and the gateway about probes:
// the tag that keeps their refusals out of the incident list, and the proof that a
// refusal came from the gateway rather than from an upstream that copied its headers.
package probetag

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Header names and values.
const (
	// Header carries "doctor" and, where a proof is wanted, " nonce=<hex>".
	Header = "Sluice-Probe"
	// ProofHeader is the gateway's answer: Proof(key, nonce, reason).
	ProofHeader = "Sluice-Probe-Proof"
	// Doctor is the tag's value.
	Doctor = "doctor"
	// DNSLabel starts the first label of the names the doctor queries, so that the
	// resolver's refusals of them are counted but not stored.
	DNSLabel = "sluice-probe-"
)

// NewNonce returns 16 random bytes in hex.
func NewNonce() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// Value is the tag with nonce ("" for none).
func Value(nonce string) string {
	if nonce == "" {
		return Doctor
	}
	return Doctor + " nonce=" + nonce
}

// Parse reads a tag: whether it is the doctor's, and its nonce ("" when absent or
// malformed).
func Parse(v string) (ok bool, nonce string) {
	tag, rest, _ := strings.Cut(strings.TrimSpace(v), " ")
	if tag != Doctor {
		return false, ""
	}
	n, found := strings.CutPrefix(strings.TrimSpace(rest), "nonce=")
	if !found || len(n) < 16 || len(n) > 64 {
		return true, ""
	}
	if _, err := hex.DecodeString(n); err != nil {
		return true, ""
	}
	return true, n
}

// KeyFromToken is the proof key of a client that authenticates with a token (the
// explicit proxy): the upstream never sees Proxy-Authorization, so it cannot make it.
func KeyFromToken(token string) []byte {
	k := sha256.Sum256([]byte("sluice-probe-token\x00" + token))
	return k[:]
}

// KeyFromCA is the proof key of a transparent sandbox, which has no token but trusts
// its tenant's CA (der is the CA certificate).
func KeyFromCA(der []byte) []byte {
	k := sha256.Sum256(append([]byte("sluice-probe-ca\x00"), der...))
	return k[:]
}

// Proof binds a refusal's reason to the probe's nonce under key.
func Proof(key []byte, nonce, reason string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(nonce + "\x00" + reason))
	return hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether proof is Proof(key, nonce, reason).
func Verify(key []byte, nonce, reason, proof string) bool {
	return nonce != "" && hmac.Equal([]byte(Proof(key, nonce, reason)), []byte(proof))
}
