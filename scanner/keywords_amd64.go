package scanner

import "unsafe"

// walk4 is walk4Go in assembly (keywords_amd64.s).
func walk4(next []uint32, class *[256]uint8, t0, t1, t2, t3 string, i int, r *[interleave]uint32) int {
	n := len(t0)
	if i >= n {
		return n
	}
	// The assembly reads n bytes of each stream and indexes next without
	// a mask: every row plus a class is within it (newKeywordSet).
	t1, t2, t3 = t1[:n], t2[:n], t3[:n]
	return walk4Asm(&next[0], class, unsafe.StringData(t0), unsafe.StringData(t1), unsafe.StringData(t2),
		unsafe.StringData(t3), i, n, r)
}

//go:noescape
func walk4Asm(next *uint32, class *[256]uint8, t0, t1, t2, t3 *byte, i, n int, r *[interleave]uint32) int
