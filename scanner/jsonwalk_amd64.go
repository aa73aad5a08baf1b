package scanner

import "golang.org/x/sys/cpu"

// strMaskAsm: the CPU has AVX2, with which strSpecialBlockAVX2 looks at
// 32 bytes of a JSON string at once.
var strMaskAsm = cpu.X86.HasAVX2

// strSpecialBlock is the offset of the first whole block of 32 bytes of
// b that holds a strSpecial byte, and those bytes as bits (bit i for
// b[off+i]); when no whole block does, the end of the whole blocks and 0.
// Call it only when strMaskAsm is true.
func strSpecialBlock(b []byte) (off int, mask uint32) {
	if len(b) < 32 {
		return 0, 0
	}
	return strSpecialBlockAVX2(&b[0], len(b))
}

// strSpecialBlockAVX2 is strSpecialBlock in assembly (jsonwalk_amd64.s).
//
//go:noescape
func strSpecialBlockAVX2(p *byte, n int) (off int, mask uint32)
