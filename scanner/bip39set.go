package scanner

// bip39Set is the BIP-39 wordlist as an open-addressing table of words
// packed into a uint64 (every word is 3 to 8 lower-case letters): the
// mnemonic detector looks up every short word of a text, and a packed
// lookup costs a multiply and one or two loads where a map[string] lookup
// hashes the string and compares it (measured: mnemonics took a third of
// the CPU of a prose scan with the map).
type bip39Set struct {
	keys [bip39Slots]uint64 // 0: empty
	idx  [bip39Slots]uint16 // the word's index in the wordlist
	// seen has the bit of every word's hash (bip39Bit): most words of prose
	// are not wordlist words, and one test of a small bitmap tells most of
	// them without a probe of the larger table.
	seen [bip39Bits / 64]uint64
}

const bip39Bits = 1 << 15 // 2048 words: about 6% of other words pass

// bip39Bit is the bit of k in seen: the hash's top 15 bits, of which the
// slot's 12 are the top (a word's bit and slot come from one multiply).
func bip39Bit(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> 49 }

const bip39Slots = 4096 // a power of two, twice the wordlist

// packWord packs a word of 1 to 8 bytes; ok is false for a longer one.
func packWord(w string) (uint64, bool) {
	if len(w) == 0 || len(w) > 8 {
		return 0, false
	}
	var k uint64
	for i := 0; i < len(w); i++ {
		k = k<<8 | uint64(w[i])
	}
	return k, true
}

func bip39Slot(k uint64) int { return int((k * 0x9E3779B97F4A7C15) >> 52) } // 12 bits

func newBIP39Set(words []string) *bip39Set {
	s := &bip39Set{}
	for n, w := range words {
		k, ok := packWord(w)
		if !ok {
			panic("scanner: BIP-39 word longer than 8 bytes: " + w)
		}
		i := bip39Slot(k)
		for s.keys[i] != 0 && s.keys[i] != k {
			i = (i + 1) & (bip39Slots - 1)
		}
		s.keys[i], s.idx[i] = k, uint16(n)
		b := bip39Bit(k)
		s.seen[b/64] |= 1 << (b % 64)
	}
	return s
}

// has reports whether w is a wordlist word.
func (s *bip39Set) has(w string) bool {
	if len(w) < 3 || len(w) > 8 {
		return false
	}
	k, _ := packWord(w)
	_, ok := s.index(k)
	return ok
}

// maybe is false when the packed word k is surely no wordlist word: one
// test of the bitmap, which rules out about 94% of other words.
func (s *bip39Set) maybe(k uint64) bool {
	b := bip39Bit(k)
	return s.seen[b/64]&(1<<(b%64)) != 0
}

// index is the wordlist index of the packed word k, if it is one.
func (s *bip39Set) index(k uint64) (uint16, bool) {
	if !s.maybe(k) {
		return 0, false
	}
	for i := bip39Slot(k); ; i = (i + 1) & (bip39Slots - 1) {
		switch s.keys[i] {
		case k:
			return s.idx[i], true
		case 0:
			return 0, false
		}
	}
}

// bip39Words39 is the packed wordlist, built on first use.
func bip39Words39() *bip39Set {
	bip39Words()
	return bip39Fast
}
