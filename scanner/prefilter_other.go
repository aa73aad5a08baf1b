//go:build !amd64

package scanner

// Without the assembly, the classes are computed in Go, a byte at a time,
// and the byte loop is faster.
var featureMasksAsm, useFeatureMasks = false, false

func featureMasks(p *byte, blocks int, out *blockMasks) { featureMasksGo(p, blocks, out) }
