package scanner

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/crypto/sha3"
)

var (
	wifRE     = regexp.MustCompile(`(?:^|[^1-9A-Za-z])([59KLc][1-9A-HJ-NP-Za-km-z]{50,51})(?:$|[^1-9A-Za-z])`)
	xprvRE    = regexp.MustCompile(`(?:^|[^1-9A-Za-z])([xtyzuv]prv[1-9A-HJ-NP-Za-km-z]{100,112})(?:$|[^1-9A-Za-z])`)
	btcRE     = regexp.MustCompile(`(?:^|[^1-9A-Za-z])([123mn][1-9A-HJ-NP-Za-km-z]{25,34})(?:$|[^1-9A-Za-z])`)
	bech32RE  = regexp.MustCompile(`(?i)(?:^|[^0-9a-z])((?:bc|tb)1[02-9ac-hj-np-z]{11,87})(?:$|[^0-9a-z])`)
	ethRE     = regexp.MustCompile(`(?:^|[^0-9A-Za-z])(0x[0-9a-fA-F]{40})(?:$|[^0-9A-Za-z])`)
	hexKeyRE  = regexp.MustCompile(`(?i)(?:priv(?:ate)?[ _.-]?key|privkey|secret[ _.-]?key|signing[ _.-]?key|wallet[ _.-]?key|eth(?:ereum)?[ _.-]?key|key[ _.-]?hex)["'\s]{0,3}(?:[:=]|=>)?["'\s]{0,3}(?:0x)?([0-9a-fA-F]{64})(?:$|[^0-9A-Za-z])`)
	wordRunRE = regexp.MustCompile(`[a-z]{3,8}(?:[ \t\r\n]+[a-z]{3,8}){11,}`)
)

// extended private key versions (BIP-32, and SLIP-132's y/z/u/v variants).
var xprvVersions = map[[4]byte]bool{
	{0x04, 0x88, 0xad, 0xe4}: true, // xprv
	{0x04, 0x35, 0x83, 0x94}: true, // tprv
	{0x04, 0x9d, 0x78, 0x78}: true, // yprv
	{0x04, 0xb2, 0x43, 0x0c}: true, // zprv
	{0x04, 0x4a, 0x4e, 0x28}: true, // uprv
	{0x04, 0x5f, 0x18, 0xbc}: true, // vprv
}

// detectCrypto reports cryptocurrency private keys (WIF, extended keys,
// BIP-39 phrases, hex keys named as such) and addresses, each only when its
// checksum holds.
func detectCrypto(text string, emit func(Finding)) {
	each := func(re *regexp.Regexp, fn func(v string) (string, bool)) {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			v := text[m[2]:m[3]]
			if rule, ok := fn(v); ok {
				emit(secretFinding(rule, text, v))
			}
		}
	}
	each(wifRE, func(v string) (string, bool) {
		p, ok := base58Check(v)
		if !ok || p[0] != 0x80 && p[0] != 0xef {
			return "", false
		}
		return RuleWIF, len(p) == 33 || len(p) == 34 && p[33] == 0x01
	})
	each(xprvRE, func(v string) (string, bool) {
		p, ok := base58Check(v)
		return RuleXPRV, ok && len(p) == 78 && xprvVersions[[4]byte(p[:4])] && p[45] == 0
	})
	each(btcRE, func(v string) (string, bool) {
		p, ok := base58Check(v)
		return RuleCryptoAddress, ok && len(p) == 21 && (p[0] == 0x00 || p[0] == 0x05 || p[0] == 0x6f || p[0] == 0xc4)
	})
	each(bech32RE, func(v string) (string, bool) {
		lv := strings.ToLower(v)
		return RuleCryptoAddress, (v == lv || v == strings.ToUpper(v)) && bech32Valid(lv)
	})
	each(ethRE, func(v string) (string, bool) { return RuleCryptoAddress, eip55(v[2:]) })
	each(hexKeyRE, func(v string) (string, bool) { return RuleHexPrivateKey, !repetitive(strings.ToLower(v)) })
	for _, m := range wordRunRE.FindAllStringIndex(text, -1) {
		for _, p := range mnemonics(text[m[0]:m[1]]) {
			emit(secretFinding(RuleMnemonic, text, p))
		}
	}
}

// eip55 reports whether the 40 hex digits are an Ethereum address as
// written: all one case, or mixed case that carries the EIP-55 checksum.
func eip55(h string) bool {
	lower := strings.ToLower(h)
	if h == lower || h == strings.ToUpper(h) {
		return !repetitive(lower)
	}
	k := sha3.NewLegacyKeccak256()
	k.Write([]byte(lower))
	sum := hex.EncodeToString(k.Sum(nil))
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c >= '0' && c <= '9' {
			continue
		}
		upper := sum[i] >= '8'
		if upper != (c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

var (
	bip39Once  sync.Once
	bip39Index map[string]int
)

func bip39Words() map[string]int {
	bip39Once.Do(func() {
		words := strings.Fields(bip39English)
		bip39Index = make(map[string]int, len(words))
		for i, w := range words {
			bip39Index[w] = i
		}
	})
	return bip39Index
}

// mnemonics returns the BIP-39 phrases within a run of words: 12, 15, 18,
// 21 or 24 consecutive wordlist words whose last bits are the checksum of
// the entropy before them. The longest phrase at a position wins.
func mnemonics(run string) []string {
	idx := bip39Words()
	fields := strings.Fields(run)
	var out []string
	for i := 0; i+12 <= len(fields); {
		n := 0
		for i+n < len(fields) && n < 24 {
			if _, ok := idx[fields[i+n]]; !ok {
				break
			}
			n++
		}
		found := 0
		for _, l := range []int{24, 21, 18, 15, 12} {
			if l <= n && bip39Checksum(idx, fields[i:i+l]) {
				found = l
				break
			}
		}
		if found == 0 {
			i++
			continue
		}
		out = append(out, strings.Join(fields[i:i+found], " "))
		i += found
	}
	return out
}

// bip39Checksum checks a phrase's checksum: of its 11 bits per word, the
// first 32/33 are entropy, the rest the first bits of its SHA-256.
func bip39Checksum(idx map[string]int, words []string) bool {
	bits := len(words) * 11
	ent := bits * 32 / 33
	buf := make([]byte, (bits+7)/8)
	for w, word := range words {
		v := idx[word]
		for b := 0; b < 11; b++ {
			if v&(1<<(10-b)) != 0 {
				pos := w*11 + b
				buf[pos/8] |= 0x80 >> (pos % 8)
			}
		}
	}
	entropy := buf[:ent/8]
	sum := sha256.Sum256(entropy)
	cs := bits - ent
	for b := 0; b < cs; b++ {
		pos := ent + b
		got := buf[pos/8]&(0x80>>(pos%8)) != 0
		want := sum[b/8]&(0x80>>(b%8)) != 0
		if got != want {
			return false
		}
	}
	return true
}
