#include "textflag.h"

DATA quote32<>+0(SB)/8, $0x2222222222222222
DATA quote32<>+8(SB)/8, $0x2222222222222222
DATA quote32<>+16(SB)/8, $0x2222222222222222
DATA quote32<>+24(SB)/8, $0x2222222222222222
GLOBL quote32<>(SB), RODATA|NOPTR, $32

DATA backslash32<>+0(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA backslash32<>+8(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA backslash32<>+16(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA backslash32<>+24(SB)/8, $0x5c5c5c5c5c5c5c5c
GLOBL backslash32<>(SB), RODATA|NOPTR, $32

DATA space32<>+0(SB)/8, $0x2020202020202020
DATA space32<>+8(SB)/8, $0x2020202020202020
DATA space32<>+16(SB)/8, $0x2020202020202020
DATA space32<>+24(SB)/8, $0x2020202020202020
GLOBL space32<>(SB), RODATA|NOPTR, $32

// func strSpecialBlockAVX2(p *byte, n int) (off int, mask uint32)
//
// The first whole block of 32 bytes of p[:n] that holds a strSpecial
// byte: its offset, and its strSpecial bytes as bits (bit i for p[off+i]).
// When no whole block holds one, off is where the whole blocks end and
// mask is 0. As signed bytes, the control bytes and those from 0x80 are
// the ones below ' ': one compare finds both.
TEXT ·strSpecialBlockAVX2(SB), NOSPLIT, $0-28
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	XORQ AX, AX
	XORL DX, DX
	VMOVDQU quote32<>(SB), Y1
	VMOVDQU backslash32<>(SB), Y2
	VMOVDQU space32<>(SB), Y3

loop:
	LEAQ 32(AX), BX
	CMPQ BX, CX
	JA   done
	VMOVDQU (SI)(AX*1), Y0
	VPCMPEQB Y0, Y1, Y4
	VPCMPEQB Y0, Y2, Y5
	VPCMPGTB Y0, Y3, Y6
	VPOR     Y4, Y5, Y4
	VPOR     Y4, Y6, Y4
	VPMOVMSKB Y4, DX
	TESTL    DX, DX
	JNZ      done
	ADDQ     $32, AX
	JMP      loop

done:
	VZEROUPPER
	MOVQ AX, off+16(FP)
	MOVL DX, mask+24(FP)
	RET
