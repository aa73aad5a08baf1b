package scanner

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
	k.next = make([]uint32, len(next))
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
func (k *keywordSet) each(t string, fn func(start, id int)) {
	next, class := k.next, &k.class
	row := uint32(0)
	for i := 0; i < len(t); i++ {
		v := next[row+uint32(class[t[i]])]
		row = v &^ termBit
		if v&termBit != 0 {
			for _, id := range k.out[int(row)/k.nclass] {
				fn(i+1-k.lens[id], id)
			}
		}
	}
}
