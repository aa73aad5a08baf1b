//go:build !amd64

package scanner

func walk4(next []uint32, class *[256]uint8, t0, t1, t2, t3 string, i int, r *[interleave]uint32) int {
	return walk4Go(next, class, t0, t1, t2, t3, i, r)
}
