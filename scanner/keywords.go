package scanner

import (
	"math/bits"
	"sync"
)

// keywordSet finds every occurrence of a set of keywords in one pass over a
// text, ASCII case-insensitively, as gitleaks' prefilter does on a
// lowercased copy (without the copy). It is an Aho-Corasick automaton
// compiled to a full DFA over byte classes: one table lookup per byte, no
// failure-link walks and no allocation.
//
// Hand-written rather than imported: measured (BenchmarkKeywordSet) against
// BobuSumisu/aho-corasick (gitleaks' own), which needs a lowercased copy
// and walks failure links, this is faster on every bench body and small.
type keywordSet struct {
	class  [256]uint8 // byte → class; letters fold to their lower case
	nclass int
	next   []uint32 // next[row+class]: the next state's row (state*nclass) | termBit
	out    [][]int  // keyword ids that end in each state (own and by suffix)
	lens   []int    // keyword lengths by id
	maxLen int      // the longest keyword's length
}

// maxKeywordStates bounds the automaton: the shipped rules need about
// 2,000 states.
const maxKeywordStates = 1 << 20

// termBit marks a transition into a state where keywords end.
const termBit = 1 << 31

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// newKeywordSet compiles the keywords (already lowercased or not); it
// reports false when they need more states than the table holds.
func newKeywordSet(kws []string) (*keywordSet, bool) {
	k := &keywordSet{lens: make([]int, len(kws))}
	// Classes: one per byte that occurs in a keyword, 0 for all others.
	k.nclass = 1
	for _, w := range kws {
		for i := 0; i < len(w); i++ {
			c := lowerASCII(w[i])
			if k.class[c] == 0 {
				if k.nclass == 255 {
					return nil, false
				}
				k.class[c] = uint8(k.nclass)
				k.nclass++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		k.class[c] = k.class[c+'a'-'A']
	}
	// The trie, with -1 for a missing edge.
	trie := [][]int32{make([]int32, k.nclass)}
	for i := range trie[0] {
		trie[0][i] = -1
	}
	own := [][]int{nil}
	for id, w := range kws {
		k.lens[id] = len(w)
		k.maxLen = max(k.maxLen, len(w))
		s := 0
		for i := 0; i < len(w); i++ {
			c := k.class[w[i]]
			if trie[s][c] < 0 {
				if len(trie) >= maxKeywordStates {
					return nil, false
				}
				row := make([]int32, k.nclass)
				for j := range row {
					row[j] = -1
				}
				trie = append(trie, row)
				own = append(own, nil)
				trie[s][c] = int32(len(trie) - 1)
			}
			s = int(trie[s][c])
		}
		if len(w) > 0 {
			own[s] = append(own[s], id)
		}
	}
	// Breadth first: failure links, outputs and the full transition table.
	n := len(trie)
	next := make([]int, n*k.nclass)
	k.out = make([][]int, n)
	fail := make([]int, n)
	queue := []int{0}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		k.out[s] = append(append([]int(nil), own[s]...), k.out[fail[s]]...)
		if s == 0 {
			k.out[s] = own[s]
		}
		for c := 0; c < k.nclass; c++ {
			t := trie[s][c]
			switch {
			case t >= 0:
				if s == 0 {
					fail[t] = 0
				} else {
					fail[t] = next[fail[s]*k.nclass+c]
				}
				next[s*k.nclass+c] = int(t)
				queue = append(queue, int(t))
			case s == 0:
				next[c] = 0
			default:
				next[s*k.nclass+c] = next[fail[s]*k.nclass+c]
			}
		}
	}
	// A power of two long, so that the walks' index, masked, is in bounds
	// without a check per byte; the padding is never reached (every row
	// offset plus a class is an index of the table proper).
	k.next = make([]uint32, 1<<bits.Len(uint(len(next)-1)))
	for i, t := range next {
		k.next[i] = uint32(t * k.nclass)
		if len(k.out[t]) > 0 {
			k.next[i] |= termBit
		}
	}
	return k, true
}

// each calls fn with the start offset and id of every keyword occurrence
// in t, in order of their ends.
//
// A long text is read as four interleaved streams, one per quarter: a
// table walk is a chain of dependent loads, and four chains keep the
// core busy where one waits on each load. A stream starts maxLen-1 bytes
// before its quarter (the automaton's state then is exact from the
// quarter's start on) and reports only what ends in its quarter; the
// streams' ends are kept (as position and state) and reported in order.
// All four read as many bytes, the last quarter's with those warm bytes
// and the remainder of the division: the others read on past their
// quarters (and ignore what ends there), which costs less than walking
// the ends of the quarters one stream at a time after the others.
func (k *keywordSet) each(t string, fn func(start, id int)) {
	warm := k.maxLen - 1
	c := len(t) / interleave
	if c < minStreamLen || warm < 0 || c <= warm {
		k.each1(t, fn)
		return
	}
	ends := endsPool.Get().(*[interleave][]uint64)
	defer endsPool.Put(ends)
	for s := range ends {
		ends[s] = ends[s][:0]
	}
	next, class := k.next, &k.class
	// Stream s reads n bytes from t[s*c-warm:], stream 0 from t[0:], the
	// last up to the end of t; stream s reports the ends at its offsets
	// [lo[s], hi[s]), those in its own quarter.
	n := len(t) - (interleave-1)*c + warm
	t0, t1, t2, t3 := t[:n], t[c-warm:][:n], t[2*c-warm:][:n], t[3*c-warm:]
	lo := [interleave]int{0, warm, warm, warm}
	hi := [interleave]int{c, c + warm, c + warm, n}
	var r [interleave]uint32
	for i := 0; i < n; i++ {
		i = walk4(next, class, t0, t1, t2, t3, i, &r)
		if i == n {
			break
		}
		v := r
		for s := range r {
			r[s] &^= termBit
			if v[s]&termBit != 0 && lo[s] <= i && i < hi[s] {
				ends[s] = append(ends[s], uint64(s*c-lo[s]+i)<<32|uint64(r[s]))
			}
		}
	}
	for s := range ends {
		k.emitAll(ends[s], fn)
	}
}

// walk4Go steps the four streams of each, from i and the states r, until
// one of them enters a state where keywords end: it returns that position
// with the four transitions taken there (termBit and all) in r, or len(t0)
// with the last states. On amd64 walk4 is the same loop in assembly, where
// the states stay in registers (Go's compiler keeps some on the stack).
func walk4Go(next []uint32, class *[256]uint8, t0, t1, t2, t3 string, i int, r *[interleave]uint32) int {
	last := len(next) - 1 // a mask: len(next) is a power of two (newKeywordSet)
	n := len(t0)
	t1, t2, t3 = t1[:n], t2[:n], t3[:n]
	r0, r1, r2, r3 := r[0], r[1], r[2], r[3]
	for ; i < n; i++ {
		r0 = next[(int(r0)+int(class[t0[i]]))&last]
		r1 = next[(int(r1)+int(class[t1[i]]))&last]
		r2 = next[(int(r2)+int(class[t2[i]]))&last]
		r3 = next[(int(r3)+int(class[t3[i]]))&last]
		if (r0|r1|r2|r3)&termBit != 0 {
			break
		}
	}
	*r = [interleave]uint32{r0, r1, r2, r3}
	return i
}

// each1 is each in one stream, for short texts.
func (k *keywordSet) each1(t string, fn func(start, id int)) {
	next, class := k.next, &k.class
	_ = next[0]
	last := len(next) - 1 // a mask, as in each
	row := uint32(0)
	for i := 0; i < len(t); i++ {
		v := next[(int(row)+int(class[t[i]]))&last]
		row = v &^ termBit
		if v&termBit != 0 {
			for _, id := range k.out[int(row)/k.nclass] {
				fn(i+1-k.lens[id], id)
			}
		}
	}
}

// Streams of the interleaved walk, and the shortest quarter worth it.
const (
	interleave   = 4
	minStreamLen = 48
)

var endsPool = sync.Pool{New: func() any { return new([interleave][]uint64) }}

// emitAll reports the keywords ending at the recorded positions.
func (k *keywordSet) emitAll(ends []uint64, fn func(start, id int)) {
	for _, e := range ends {
		i, row := int(e>>32), int(uint32(e))
		for _, id := range k.out[row/k.nclass] {
			fn(i+1-k.lens[id], id)
		}
	}
}
