package scanner

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"math/big"
	"strings"

	"golang.org/x/crypto/sha3"
)

// Generators of fake values with valid checksums: nothing here is real data.

func randDigits(n int) string {
	var b strings.Builder
	for range n {
		d, _ := rand.Int(rand.Reader, big.NewInt(10))
		b.WriteByte(byte('0' + d.Int64()))
	}
	return b.String()
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// fakeCard completes prefix to length digits with a valid Luhn check digit.
func fakeCard(prefix string, length int) string {
	body := prefix + randDigits(length-len(prefix)-1)
	for d := byte('0'); d <= '9'; d++ {
		if luhn(body + string(d)) {
			return body + string(d)
		}
	}
	panic("unreachable")
}

// fakeIBAN builds an IBAN of the country's length with valid check digits.
func fakeIBAN(country string) string {
	bban := randDigits(ibanLengths[country] - 4)
	for c := 0; c < 100; c++ {
		v := country + string(rune('0'+c/10)) + string(rune('0'+c%10)) + bban
		if ibanChecksum(v) {
			return v
		}
	}
	panic("unreachable")
}

func fakeWIF(compressed bool) string {
	p := append([]byte{0x80}, randBytes(32)...)
	if compressed {
		p = append(p, 0x01)
	}
	return base58CheckEncode(p)
}

func fakeExtendedKey(version []byte, private bool) string {
	p := append([]byte(nil), version...)
	p = append(p, 0)                // depth
	p = append(p, 0, 0, 0, 0)       // parent fingerprint
	p = append(p, 0, 0, 0, 0)       // child number
	p = append(p, randBytes(32)...) // chain code
	if private {
		p = append(p, 0)
		p = append(p, randBytes(32)...)
	} else {
		p = append(p, 0x02)
		p = append(p, randBytes(32)...)
	}
	return base58CheckEncode(p)
}

// fakeMnemonic encodes random entropy of n bytes as a BIP-39 phrase.
func fakeMnemonic(n int) string {
	ent := randBytes(n)
	sum := sha256.Sum256(ent)
	bits := new(big.Int).SetBytes(append(append([]byte(nil), ent...), sum[0]))
	cs := n * 8 / 32
	bits.Rsh(bits, uint(8-cs))
	words := strings.Fields(bip39English)
	total := (n*8 + cs) / 11
	out := make([]string, total)
	mask := big.NewInt(2047)
	for i := total - 1; i >= 0; i-- {
		out[i] = words[new(big.Int).And(bits, mask).Int64()]
		bits.Rsh(bits, 11)
	}
	return strings.Join(out, " ")
}

func fakeP2PKH() string { return base58CheckEncode(append([]byte{0}, randBytes(20)...)) }

func fakeBech32() string {
	prog := randBytes(20)
	data := []int{0} // witness version 0
	acc, n := 0, 0
	for _, b := range prog {
		acc = acc<<8 | int(b)
		n += 8
		for n >= 5 {
			n -= 5
			data = append(data, (acc>>n)&31)
		}
	}
	if n > 0 {
		data = append(data, (acc<<(5-n))&31)
	}
	return bech32Encode("bc", data)
}

// fakeEthAddress returns a random address in EIP-55 checksummed case.
func fakeEthAddress() string {
	h := hex.EncodeToString(randBytes(20))
	k := sha3.NewLegacyKeccak256()
	k.Write([]byte(h))
	sum := hex.EncodeToString(k.Sum(nil))
	b := []byte(h)
	for i, c := range b {
		if c >= 'a' && sum[i] >= '8' {
			b[i] = c - 32
		}
	}
	return "0x" + string(b)
}

func fakeJWT() string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc([]byte(`{"sub":"`+randomString(base62, 12)+`"}`)) + "." + randomString(base62, 6)
}

// base58CheckEncode is base58Check's inverse, for tests and fixtures.
func base58CheckEncode(payload []byte) string {
	h := sha256.Sum256(payload)
	h = sha256.Sum256(h[:])
	b := append(append([]byte(nil), payload...), h[:4]...)
	n := new(big.Int).SetBytes(b)
	radix, mod := big.NewInt(58), new(big.Int)
	var out []byte
	for n.Sign() > 0 {
		n.DivMod(n, radix, mod)
		out = append(out, base58Alphabet[mod.Int64()])
	}
	for _, c := range b {
		if c != 0 {
			break
		}
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// bech32Encode builds a bech32 (not bech32m) string from 5-bit values, for tests.
func bech32Encode(hrp string, data []int) string {
	values := make([]int, 0)
	for j := 0; j < len(hrp); j++ {
		values = append(values, int(hrp[j]>>5))
	}
	values = append(values, 0)
	for j := 0; j < len(hrp); j++ {
		values = append(values, int(hrp[j]&31))
	}
	values = append(values, data...)
	values = append(values, 0, 0, 0, 0, 0, 0)
	pm := bech32Polymod(values) ^ 1
	var sb strings.Builder
	sb.WriteString(hrp + "1")
	for _, d := range data {
		sb.WriteByte(bech32Charset[d])
	}
	for i := 0; i < 6; i++ {
		sb.WriteByte(bech32Charset[(pm>>(5*(5-i)))&31])
	}
	return sb.String()
}
