//go:build !amd64

package scanner

// Without the assembly, appendString reads eight bytes at a time.
const strMaskAsm = false

func strSpecialBlock(b []byte) (off int, mask uint32) { panic("strSpecialBlock without strMaskAsm") }
