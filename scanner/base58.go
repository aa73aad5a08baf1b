package scanner

import (
	"bytes"
	"crypto/sha256"
	"math/big"
	"strings"
)

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58Index maps a byte to its base58 digit, -1 when it is none.
var base58Index = digitValues(base58Alphabet)

// digitValues maps each byte to its digit in alphabet, -1 for none.
func digitValues(alphabet string) (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = int8(i)
	}
	return t
}

// base58Check decodes Bitcoin's base58check: the payload (version byte(s)
// included) when the trailing four bytes are its double-SHA-256 checksum.
func base58Check(s string) ([]byte, bool) {
	n := new(big.Int)
	radix := big.NewInt(58)
	for i := 0; i < len(s); i++ {
		if s[i] >= 128 || base58Index[s[i]] < 0 {
			return nil, false
		}
		d := int(base58Index[s[i]])
		n.Mul(n, radix)
		n.Add(n, big.NewInt(int64(d)))
	}
	b := n.Bytes()
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	b = append(make([]byte, zeros), b...)
	if len(b) < 5 {
		return nil, false
	}
	payload, sum := b[:len(b)-4], b[len(b)-4:]
	h := sha256.Sum256(payload)
	h = sha256.Sum256(h[:])
	if !bytes.Equal(h[:4], sum) {
		return nil, false
	}
	return payload, true
}

const bech32Charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

// bech32Valid reports whether s (lower case) is a valid bech32 (BIP-173) or
// bech32m (BIP-350) string for the human-readable part hrp.
func bech32Valid(s string) bool {
	i := strings.LastIndexByte(s, '1')
	if i < 1 || i+7 > len(s) {
		return false
	}
	hrp, data := s[:i], s[i+1:]
	values := make([]int, 0, len(hrp)*2+1+len(data))
	for j := 0; j < len(hrp); j++ {
		values = append(values, int(hrp[j]>>5))
	}
	values = append(values, 0)
	for j := 0; j < len(hrp); j++ {
		values = append(values, int(hrp[j]&31))
	}
	for j := 0; j < len(data); j++ {
		d := strings.IndexByte(bech32Charset, data[j])
		if d < 0 {
			return false
		}
		values = append(values, d)
	}
	c := bech32Polymod(values)
	return c == 1 || c == 0x2bc830a3
}

func bech32Polymod(values []int) int {
	gen := [5]int{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3}
	chk := 1
	for _, v := range values {
		b := chk >> 25
		chk = (chk&0x1ffffff)<<5 ^ v
		for i := 0; i < 5; i++ {
			if (b>>i)&1 == 1 {
				chk ^= gen[i]
			}
		}
	}
	return chk
}
