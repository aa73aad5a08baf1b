package scanner

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
)

// cleanCache remembers the body texts a scan found nothing in, so that the
// same text sent again is not scanned again. An agent's call to a model
// API resends the whole conversation on every turn: without the cache, a
// conversation's scanning grows with the square of its length, and a long
// one costs a full scan of all of it for each new message.
//
// A text is the same only for the same tenant and host, the same place
// and decoding, and the same bytes: the key is a 128-bit hash of all of
// them with a per-process seed, so that nobody can make a text collide
// with one that was found clean. What a scan finds in a text depends on
// the text and the rules alone (the scanner, and its cache, is rebuilt
// when they change), except for two things:
//   - links: whether one leads outside depends on the policy of the day,
//     so a text in which a link's host was looked up is not cached;
//   - canaries and phantoms, which are minted while the scanner runs (and
//     reach replicas late): an entry keeps the fingerprints of the text's
//     tokens that have a canary's or phantom's length, and a hit looks
//     them up again; a hit is a miss when one of them is known now, or
//     when the lengths have changed since.
//
// The cache holds at most about entries texts, in two generations per
// shard: when the young one is full, it becomes the old one and the old
// one is dropped, and a hit in the old one moves the text to the young.
type cleanCache struct {
	seeds   [2]maphash.Seed
	perGen  int // entries per shard and generation
	shards  [cleanShards]cleanShard
	lensKey maphash.Seed
	hits    atomic.Uint64 // texts not scanned again
}

const (
	cleanShards = 16
	// minCleanText is the shortest text worth a lookup: a shorter one is
	// scanned in about the time a lookup takes.
	minCleanText = 256
	// maxCleanTokens bounds the fingerprints an entry keeps; a text with
	// more tokens that may be canaries or phantoms is not cached.
	maxCleanTokens = 4
	// DefaultCleanCacheEntries is Scanner.CleanCacheEntries' default:
	// about 10 MB of entries.
	DefaultCleanCacheEntries = 1 << 17
)

// cleanShard keeps an entry's lens apart from its tokens, which few texts
// have: maps without pointers are not read by the garbage collector, which
// otherwise went through every entry of the cache on each of its cycles
// (its marking was 7 % of the gateway's CPU on an upload of new chat JSON,
// 2 % since).
type cleanShard struct {
	mu               sync.Mutex
	young, old       map[cleanKey]uint64 // lens
	youngTok, oldTok map[cleanKey][]string
}

type cleanKey [2]uint64

type cleanEntry struct {
	lens   uint64   // cleanCache.lensSum of the lengths the tokens were taken for
	tokens []string // fingerprints of the tokens of those lengths
}

func newCleanCache(entries int) *cleanCache {
	c := &cleanCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, lensKey: maphash.MakeSeed(),
		perGen: max(entries/cleanShards/2, 1)}
	for i := range c.shards {
		c.shards[i].young = map[cleanKey]uint64{}
	}
	return c
}

// key is g's key for the request's tenant and host.
func (c *cleanCache) key(tenant, host string, g *segment) cleanKey {
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
	bits := uint64(0)
	if g.body {
		bits |= 1
	}
	if g.basic {
		bits |= 2
	}
	for _, v := range [5]uint64{uint64(len(g.chain)), uint64(g.depth), uint64(g.line), uint64(len(g.text)), bits} {
		meta = binary.LittleEndian.AppendUint64(meta, v)
	}
	var k cleanKey
	for i, seed := range c.seeds {
		k[i] = maphash.Bytes(seed, meta) ^ maphash.String(seed, g.text)
	}
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

func (c *cleanCache) shard(k cleanKey) *cleanShard { return &c.shards[k[0]%cleanShards] }

// get returns k's entry.
func (c *cleanCache) get(k cleanKey) (cleanEntry, bool) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if lens, ok := s.young[k]; ok {
		return cleanEntry{lens: lens, tokens: s.youngTok[k]}, true
	}
	lens, ok := s.old[k]
	if !ok {
		return cleanEntry{}, false
	}
	e := cleanEntry{lens: lens, tokens: s.oldTok[k]}
	s.put(k, e, c.perGen)
	return e, true
}

// add remembers k as clean.
func (c *cleanCache) add(k cleanKey, e cleanEntry) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(k, e, c.perGen)
}

func (s *cleanShard) put(k cleanKey, e cleanEntry, perGen int) {
	if len(s.young) >= perGen {
		s.old, s.young = s.young, make(map[cleanKey]uint64, perGen)
		s.oldTok, s.youngTok = s.youngTok, nil
	}
	s.young[k] = e.lens
	if len(e.tokens) > 0 {
		if s.youngTok == nil {
			s.youngTok = map[cleanKey][]string{}
		}
		s.youngTok[k] = e.tokens
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

// stillClean reports whether none of the entry's tokens is a canary or a
// phantom now.
func (s *Scanner) stillClean(e cleanEntry, lens uint64) bool {
	if e.lens != lens {
		return false
	}
	for _, fp := range e.tokens {
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
