package scanner

import "golang.org/x/sys/cpu"

// strPlainAsm: the CPU has AVX2, with which strPlainAVX2 looks at 32 bytes
// of a JSON string a step.
var strPlainAsm = cpu.X86.HasAVX2

// strPlain is the count of bytes at the start of b that are no strSpecial
// byte, looked at 32 at a time: the count is exact when it stops short of
// len(b)&^31, and the bytes after it are left to the caller.
func strPlain(b []byte) int {
	if !strPlainAsm || len(b) < 32 {
		return 0
	}
	return strPlainAVX2(&b[0], len(b))
}

// strPlainAVX2 is strPlain in assembly (jsonwalk_amd64.s).
//
//go:noescape
func strPlainAVX2(p *byte, n int) int
