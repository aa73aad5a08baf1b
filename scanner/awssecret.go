package scanner

import (
	"encoding/hex"
	"slices"
	"strings"
)

// RuleAWSSecretEncoded (detectors.go) is an AWS secret access key's shape
// alone in bytes the scanner decoded from hex or base64. gitleaks finds such
// a key only beside an "aws" or "secret" word; one hidden in an encoding has
// none, and hiding a key-shaped string in an encoding is itself the signal.

// awsSecretLen is an AWS secret access key's length: 40 characters of
// base64's alphabet (30 random bytes).
const awsSecretLen = 40

// inEncodedLayer: detectAWSSecretEncoded reads only texts decoded from hex,
// base64 or base32. In plain text the shape is too common (a base64 run cut
// to 40 characters, a nonce) to stand alone. Behind an encoding it is rare: text
// seldom holds one, and random binary almost never (a byte of it is in
// base64's alphabet one time in four, so 40 in a row almost never are).
func inEncodedLayer(g *segment) bool {
	return g.depth > 0 && (slices.Contains(g.chain, encHex) || slices.Contains(g.chain, encBase64) ||
		slices.Contains(g.chain, encBase64URL) || slices.Contains(g.chain, encBase32))
}

// detectAWSSecretEncoded reports runs of exactly awsSecretLen base64
// characters, bounded by bytes outside the alphabet (so not a piece of a
// longer base64 run), that look like a random key: upper and lower case
// letters and digits, a '/' or '+', and high entropy.
func detectAWSSecretEncoded(text string, emit func(Finding)) {
	for i := 0; i < len(text); {
		if !isB64Std(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isB64Std(text[j]) {
			j++
		}
		end := j
		for end < len(text) && text[end] == '=' {
			end++
		}
		if j-i == awsSecretLen && end == j && awsKeyLike(text[i:j]) {
			emit(secretAt(RuleAWSSecretEncoded, text, i, j))
		}
		i = j
	}
}

// awsKeyLike: upper and lower case, digits, a '/' or '+', and the entropy of
// random base64 (40 random characters of 64 average about 4.8 bits each;
// English words and repeated patterns stay well below 4).
func awsKeyLike(s string) bool {
	return mixedCase(s) && strings.ContainsAny(s, "+/") && entropy(s) >= 4.3
}

// detectAWSSecretInHex reads the hex runs of a text that decode to binary
// bytes, not text (those that decode to text are a layer of their own, which
// every rule reads and inEncodedLayer admits): an AWS secret key's shape
// among binary padding, as a firmware-looking upload hides one.
func detectAWSSecretInHex(text string, emit func(Finding)) {
	for i := 0; i < len(text); {
		// Here text[i-1] is not hex: when the byte at the shortest run's
		// end is not either, or the last one before it that is not, no
		// run long enough starts up to there.
		e := i + 2*awsSecretLen - 1
		if e >= len(text) {
			return
		}
		k := e
		for k > i && isHexByte[text[k]] {
			k--
		}
		if k > i || !isHexByte[text[i]] {
			i = k + 1
			continue
		}
		j := e + 1
		for j < len(text) && isHexByte[text[j]] {
			j++
		}
		run := text[i : i+(j-i)&^1]
		if b, err := hex.DecodeString(run); err == nil && !textual(b) {
			detectAWSSecretEncoded(string(b), func(f Finding) {
				f.Snippet = "hex-encoded bytes: " + f.Snippet
				emit(f)
			})
		}
		i = j
	}
}
