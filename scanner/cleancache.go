package scanner

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// cleanCache remembers the body texts a scan found nothing in, so that the
// same text sent again is not scanned again. An agent's call to a model
// API resends the whole conversation on every turn: without the cache, a
// conversation's scanning grows with the square of its length, and a long
// one costs a full scan of all of it for each new message.
//
// A text is the same only for the same tenant and host, the same place
// and decoding, and the same bytes: the key is a 126-bit hash of all of
// them (two bits are marks) with per-process seeds, so that nobody can
// make a text collide with one that was found clean. What a scan finds in
// a text depends on the text and the rules alone (the scanner, and its
// cache, is rebuilt when they change), except for two things:
//   - links: whether one leads outside depends on the policy of the day,
//     so a text in which a link's host was looked up is not cached;
//   - canaries and phantoms, which are minted while the scanner runs (and
//     reach replicas late): an entry keeps the fingerprints of the text's
//     tokens that have a canary's or phantom's length, and a hit looks
//     them up again; a hit is a miss when one of them is known now, or
//     when the lengths have changed since.
//
// The cache is a table of sets of cleanWays keys, a set to a cache line:
// a lookup reads one line, and a text that is new (most of an upload is)
// costs one lookup and one insertion, each under its set's lock. A set
// keeps its keys most recently used first and drops the last when a new
// one comes. The lengths of canaries and phantoms are part of the key; the
// few entries that have tokens are marked in their key and keep them in a
// map of their own. The sets hold no pointers, so that the garbage
// collector does not read them on each of its cycles.
type cleanCache struct {
	seeds   [2]maphash.Seed
	lensKey maphash.Seed
	sets    []cleanSet
	shift   uint // a key's set is k[0] >> shift
	locks   [cleanLocks]cleanLock
	tokMu   sync.Mutex
	tokens  map[cleanKey][]string // by key (the mark cleared): the entries that have tokens
	hits    atomic.Uint64         // texts not scanned again
}

const (
	// cleanWays is the keys of a set: 4 × 16 bytes, a cache line.
	cleanWays = 4
	// cleanLocks stripes the sets' locks: set i is under lock i % cleanLocks.
	cleanLocks = 64
	// minCleanText is the shortest text worth a lookup: a shorter one is
	// scanned in about the time a lookup takes.
	minCleanText = 256
	// maxCleanTokens bounds the fingerprints an entry keeps; a text with
	// more tokens that may be canaries or phantoms is not cached.
	maxCleanTokens = 4
	// DefaultCleanCacheEntries is Scanner.CleanCacheEntries' default:
	// 2 MiB of keys.
	DefaultCleanCacheEntries = 1 << 17
)

// cleanKey is a 128-bit key. Bit 0 of k[1] is always set, so that no key
// is the zero of an empty way; bit 0 of k[0] (cleanHasTokens) is clear in
// a key looked up, and set in a stored key whose entry has tokens.
type cleanKey [2]uint64

const cleanHasTokens = 1

type cleanSet [cleanWays]cleanKey

// cleanLock has a cache line of its own, so that two cores taking
// neighbouring locks do not take the line from each other.
type cleanLock struct {
	sync.Mutex
	_ [56]byte
}

// newCleanCache holds at least entries keys.
func newCleanCache(entries int) *cleanCache {
	sets := 1
	for sets*cleanWays < entries {
		sets *= 2
	}
	return &cleanCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, lensKey: maphash.MakeSeed(),
		sets: make([]cleanSet, sets), shift: uint(64 - bits.TrailingZeros(uint(sets))), tokens: map[cleanKey][]string{}}
}

// key is g's key for the request's tenant and host and the scan's lengths
// of canaries and phantoms (lensSum).
func (c *cleanCache) key(tenant, host string, g *segment, lens uint64) cleanKey {
	// Every variable-length field ends in a 0 byte that it cannot hold
	// (or is preceded by its length), so that no two field lists hash the
	// same bytes. The fields are laid out once and hashed in one call per
	// seed: a streaming maphash.Hash cost more than the text's hashing.
	var stack [256]byte
	meta := stack[:0]
	for _, f := range [4]string{tenant, host, g.where, g.header} {
		meta = append(append(meta, f...), 0)
	}
	for _, f := range g.chain {
		meta = append(append(meta, f...), 0)
	}
	flags := uint64(0)
	if g.body {
		flags |= 1
	}
	if g.basic {
		flags |= 2
	}
	for _, v := range [6]uint64{uint64(len(g.chain)), uint64(g.depth), uint64(g.line), uint64(len(g.text)), flags, lens} {
		meta = binary.LittleEndian.AppendUint64(meta, v)
	}
	var k cleanKey
	for i, seed := range c.seeds {
		k[i] = maphash.Bytes(seed, meta) ^ maphash.String(seed, g.text)
	}
	k[0] &^= cleanHasTokens
	k[1] |= 1
	return k
}

// lensSum sums up the canary and phantom lengths of a scan.
func (c *cleanCache) lensSum(canary, phantom map[int]bool) uint64 {
	var h maphash.Hash
	h.SetSeed(c.lensKey)
	for _, m := range []map[int]bool{canary, phantom} {
		ls := make([]int, 0, len(m))
		for l, ok := range m {
			if ok {
				ls = append(ls, l)
			}
		}
		slices.Sort(ls)
		for _, l := range ls {
			h.Write(binary.LittleEndian.AppendUint64(nil, uint64(l)))
		}
		h.Write(binary.LittleEndian.AppendUint64(nil, ^uint64(0))) // no length: ends the set
	}
	return h.Sum64()
}

// lock locks set i and returns it.
func (c *cleanCache) lock(i uint64) (*cleanSet, *sync.Mutex) {
	l := &c.locks[i%cleanLocks].Mutex
	l.Lock()
	return &c.sets[i], l
}

// index is k's set (with one set, shift is 64 and Go's shift gives 0).
func (c *cleanCache) index(k cleanKey) uint64 { return k[0] >> c.shift }

// prefetch starts bringing k's set into the cache: the table is larger
// than a core's cache, and a lookup of a text not seen lately waits for
// memory. Asked for one segment ahead, the line is in when get comes.
func (c *cleanCache) prefetch(k cleanKey) {
	prefetch(unsafe.Pointer(&c.sets[c.index(k)]))
}

// find is k's way in set, or -1.
func (set *cleanSet) find(k cleanKey) int {
	for w := range set {
		if set[w][0]&^cleanHasTokens == k[0] && set[w][1] == k[1] {
			return w
		}
	}
	return -1
}

// get reports whether k is clean, with its entry's tokens; a hit becomes
// its set's most recently used key.
func (c *cleanCache) get(k cleanKey) (tokens []string, ok bool) {
	set, l := c.lock(c.index(k))
	w := set.find(k)
	if w < 0 {
		l.Unlock()
		return nil, false
	}
	stored := set[w]
	copy(set[1:w+1], set[:w])
	set[0] = stored
	l.Unlock()
	if stored[0]&cleanHasTokens == 0 {
		return nil, true
	}
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	tokens, ok = c.tokens[k]
	return tokens, ok // not ok: dropped and added again meanwhile, its tokens not yet in
}

// add remembers k as clean, with the fingerprints of its tokens; the set's
// least recently used key makes room.
func (c *cleanCache) add(k cleanKey, tokens []string) {
	stored := k
	if len(tokens) > 0 {
		stored[0] |= cleanHasTokens
	}
	set, l := c.lock(c.index(k))
	defer l.Unlock()
	w := set.find(k)
	if w < 0 {
		w = cleanWays - 1
	}
	dropped := set[w]
	copy(set[1:w+1], set[:w])
	set[0] = stored
	if dropped[0]&cleanHasTokens == 0 && len(tokens) == 0 {
		return
	}
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	if dropped[0]&cleanHasTokens != 0 {
		dropped[0] &^= cleanHasTokens
		delete(c.tokens, dropped)
	}
	if len(tokens) > 0 {
		c.tokens[k] = tokens
	}
}

// CleanHits is how many body texts s found clean before and did not scan
// again.
func (s *Scanner) CleanHits() uint64 {
	if s.clean == nil {
		return 0
	}
	return s.clean.hits.Load()
}

// cleanTokens returns the fingerprints of the tokens of segs (a group, all
// its layers) that have one of the lengths, and false when there are more
// than maxCleanTokens of them.
func (s *Scanner) cleanTokens(segs []*segment, lengths map[int]bool) ([]string, bool) {
	if len(lengths) == 0 {
		return nil, true
	}
	var fps []string
	eachCandidate(segs, nil, lengths, func(_ *segment, tok string) {
		if len(fps) <= maxCleanTokens {
			fps = append(fps, fingerprint(s.Key, tok))
		}
	})
	return fps, len(fps) <= maxCleanTokens
}

// stillClean reports whether none of the tokens (an entry's
// fingerprints) is a canary or a phantom now.
func (s *Scanner) stillClean(tokens []string) bool {
	for _, fp := range tokens {
		if s.Canaries != nil {
			if _, ok := s.Canaries.Canary(fp); ok {
				return false
			}
		}
		if s.Phantoms != nil {
			if _, ok := s.Phantoms.Phantom(fp); ok {
				return false
			}
		}
	}
	return true
}
