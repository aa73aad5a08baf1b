package scanner

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/crypto/sha3"
)

var (
	hexKeyRE = regexp.MustCompile(`(?i)(?:priv(?:ate)?[ _.-]?key|privkey|secret[ _.-]?key|signing[ _.-]?key|wallet[ _.-]?key|eth(?:ereum)?[ _.-]?key|key[ _.-]?hex)["'\s]{0,3}(?:[:=]|=>)?["'\s]{0,3}(?:0x)?([0-9a-fA-F]{64})(?:$|[^0-9A-Za-z])`)
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

// detectCrypto reports cryptocurrency private keys (WIF, extended keys, hex
// keys named as such) and addresses, each only when its checksum holds.
func detectCrypto(text string, emit func(Finding)) {
	detectBase58Keys(text, emit)
	detectBech32(text, emit)
	detectEthAddress(text, emit)
	detectHexKey(text, emit)
}

// The parts of detectCrypto, each its own detector with its own
// prefilter mark: "key" is in most code, which made all of them read it.

// detectBase58Keys reports WIF and extended private keys and base58check
// addresses.
func detectBase58Keys(text string, emit func(Finding)) {
	eachBase58Token(text, func(start, end int) { base58Key(text, start, end, emit) })
}

// detectBase58KeysIn is detectBase58Keys on the words featureScan found
// (they are eachBase58Token's).
func detectBase58KeysIn(text string, words [][2]int, emit func(Finding)) {
	for _, w := range words {
		base58Key(text, w[0], w[1], emit)
	}
}

// base58Key reports the key or address that text[start:end] is, if any.
func base58Key(text string, start, end int, emit func(Finding)) {
	v := text[start:end]
	n := len(v)
	wif := (n == 51 || n == 52) && strings.IndexByte("59KLc", v[0]) >= 0
	xprv := n >= 104 && v[1:4] == "prv"
	addr := n <= 35 && strings.IndexByte("13mn2", v[0]) >= 0
	if !wif && !xprv && !addr {
		return // decoding is dear: only the shapes of keys and addresses
	}
	p, ok := base58Check(v)
	if !ok {
		return
	}
	rule := ""
	switch {
	case wif && (p[0] == 0x80 || p[0] == 0xef) && (len(p) == 33 || len(p) == 34 && p[33] == 0x01):
		rule = RuleWIF
	case xprv && len(p) == 78 && xprvVersions[[4]byte(p[:4])] && p[45] == 0:
		rule = RuleXPRV
	case addr && len(p) == 21 && (p[0] == 0x00 || p[0] == 0x05 || p[0] == 0x6f || p[0] == 0xc4):
		rule = RuleCryptoAddress
	default:
		return
	}
	emit(secretAt(rule, text, start, end))
}

// detectBech32 reports bech32 addresses.
func detectBech32(text string, emit func(Finding)) {
	eachWordAfter(text, []string{"bc1", "tb1", "BC1", "TB1"}, func(start, end int) {
		v := text[start:end]
		lv := strings.ToLower(v)
		if end-start >= 14 && end-start <= 90 && (v == lv || v == strings.ToUpper(v)) && bech32Valid(lv) {
			emit(secretAt(RuleCryptoAddress, text, start, end))
		}
	})
}

// detectEthAddress reports Ethereum addresses.
func detectEthAddress(text string, emit func(Finding)) {
	eachWordAfter(text, []string{"0x", "0X"}, func(start, end int) {
		if end-start == 42 && isHexStr(text[start+2:end]) && eip55(text[start+2:end]) {
			emit(secretAt(RuleCryptoAddress, text, start, end))
		}
	})
}

// detectHexKey reports 64 hex digits beside a private-key word.
// minHexKeyRun is the length of a hex private key: a run of base64 bytes
// at least that long (fLongRun) holds every run of that many hex digits.
const minHexKeyRun = 64

func detectHexKey(text string, emit func(Finding)) {
	if !containsAny(text, "key", "Key", "KEY") || !hasHexRun(text, minHexKeyRun) {
		return
	}
	for _, m := range hexKeyRE.FindAllStringSubmatchIndex(text, -1) {
		if v := text[m[2]:m[3]]; !repetitive(strings.ToLower(v)) {
			emit(secretAt(RuleHexPrivateKey, text, m[2], m[3]))
		}
	}
}

// detectMnemonic reports BIP-39 phrases with a valid checksum.
func detectMnemonic(text string, emit func(Finding)) {
	for _, p := range mnemonics(text) {
		emit(secretFinding(RuleMnemonic, text, p))
	}
}

// detectMnemonicIn is detectMnemonic reading only the spans where the
// prefilter found a phrase (featureScan).
func detectMnemonicIn(text string, spans [][2]int, emit func(Finding)) {
	for _, sp := range spans {
		for _, p := range mnemonics(text[sp[0]:sp[1]]) {
			emit(secretFinding(RuleMnemonic, text, p))
		}
	}
}

// containsAny reports whether s holds one of the substrings.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// eachBase58Token calls fn for every word of 26 to 112 letters and digits
// that are all base58 digits: the lengths of addresses, WIF and extended
// keys. A word is a maximal run of ASCII letters and digits.
func eachBase58Token(s string, fn func(start, end int)) {
	for i := 0; i < len(s); {
		if !isAlnum(s[i]) {
			i++
			continue
		}
		j, ok := i, true
		for j < len(s) && isAlnum(s[j]) {
			if base58Index[s[j]] < 0 {
				ok = false
			}
			j++
		}
		if ok && j-i >= 26 && j-i <= 112 {
			fn(i, j)
		}
		i = j
	}
}

// eachWordAfter calls fn for every word (a maximal run of ASCII letters
// and digits) that starts with one of the prefixes.
func eachWordAfter(s string, prefixes []string, fn func(start, end int)) {
	for _, p := range prefixes {
		for off := 0; ; {
			i := strings.Index(s[off:], p)
			if i < 0 {
				break
			}
			start := off + i
			end := start + len(p)
			for end < len(s) && isAlnum(s[end]) {
				end++
			}
			if start == 0 || !isAlnum(s[start-1]) {
				fn(start, end)
			}
			off = end
		}
	}
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// hasHexRun reports a run of n hex digits.
func hasHexRun(s string, n int) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' {
			if run++; run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
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

// bip39English is the BIP-39 English wordlist (bitcoin/bips
// bip-0039/english.txt, CRC-32 c1dbd296), 2048 words in order, one per line,
// as github.com/tyler-smith/go-bip39 v1.1.0 ships it (MIT licence,
// Copyright (c) 2014-2018 Tyler Smith and contributors).
//
//go:embed bip39-english.txt
var bip39English string

var (
	bip39Once  sync.Once
	bip39Index map[string]int
	bip39Fast  *bip39Set
)

func bip39Words() map[string]int {
	bip39Once.Do(func() {
		words := strings.Fields(bip39English)
		bip39Index = make(map[string]int, len(words))
		for i, w := range words {
			bip39Index[w] = i
		}
		bip39Fast = newBIP39Set(words)
	})
	return bip39Index
}

// mnemonics returns the BIP-39 phrases in text: a run of exactly 12, 15, 18,
// 21 or 24 lower-case wordlist words, split by white space only and bounded by
// anything else, whose last bits are the checksum of the entropy before them.
// A longer run is prose, not a phrase: with 4 to 8 checksum bits, windows slid
// over ordinary English would match by chance (1 in 16 for 12 words).
func mnemonics(text string) []string {
	idx := bip39Words()
	set := bip39Fast
	var out []string
	var run []string // wordlist words in a row
	flush := func() {
		switch len(run) {
		case 12, 15, 18, 21, 24:
			if bip39Checksum(idx, run) {
				out = append(out, strings.Join(run, " "))
			}
		}
		run = run[:0]
	}
	isLetter := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 }
	for i := 0; i < len(text); {
		c := text[i]
		if !isLetter(c) {
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				flush()
			}
			i++
			continue
		}
		j := i
		for j < len(text) && isLetter(text[j]) {
			j++
		}
		// A word with a capital or a non-ASCII letter is not a wordlist word.
		if set.has(text[i:j]) {
			run = append(run, text[i:j])
		} else {
			flush()
		}
		i = j
	}
	flush()
	return out
}

// bip39Checksum checks a phrase's checksum: of its 11 bits per word, the
// first 32/33 are entropy, the rest the first bits of its SHA-256.
func bip39Checksum(idx map[string]int, words []string) bool {
	var vs [24]uint16
	if len(words) > len(vs) {
		return false
	}
	for w, word := range words {
		vs[w] = uint16(idx[word])
	}
	return bip39ChecksumOf(vs[:len(words)])
}

// bip39ChecksumOf is bip39Checksum on the words' wordlist indices (at
// most 24).
func bip39ChecksumOf(vs []uint16) bool {
	bits := len(vs) * 11
	ent := bits * 32 / 33
	var arr [33]byte
	buf := arr[:(bits+7)/8]
	for w, v := range vs {
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
