package scanner

import "golang.org/x/sys/cpu"

// featureMasksAsm: the CPU has AVX2, with which featureMasksAVX2 classifies
// 64 bytes in a few instructions.
var featureMasksAsm = cpu.X86.HasAVX2

// useFeatureMasks: scanFeatures takes scanFeatureMasks. With the classes in
// Go, a byte at a time, the byte loop is faster.
var useFeatureMasks = featureMasksAsm

// featureMasks writes the classes of the blocks of 64 bytes from p to
// out[:blocks].
func featureMasks(p *byte, blocks int, out *blockMasks) {
	if featureMasksAsm {
		featureMasksAVX2(p, blocks, out)
		return
	}
	featureMasksGo(p, blocks, out)
}

// featureMasksAVX2 is featureMasks with AVX2 (prefilter_amd64.s).
//
//go:noescape
func featureMasksAVX2(p *byte, blocks int, out *blockMasks)
