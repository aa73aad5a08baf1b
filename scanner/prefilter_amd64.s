#include "textflag.h"

// 32 copies of a byte: the constants of featureMasksAVX2.
#define BYTES32(name, q) \
	DATA name+0(SB)/8, $q; \
	DATA name+8(SB)/8, $q; \
	DATA name+16(SB)/8, $q; \
	DATA name+24(SB)/8, $q; \
	GLOBL name(SB), RODATA|NOPTR, $32

// A range [lo, lo+n) is one signed compare: x+(0x80-lo) wraps the range
// to [-128, -128+n), which is below -128+n.
BYTES32(lowerAdd<>, 0x1f1f1f1f1f1f1f1f) // 0x80-'a'
BYTES32(upperAdd<>, 0x3f3f3f3f3f3f3f3f) // 0x80-'A'
BYTES32(digitAdd<>, 0x5050505050505050) // 0x80-'0'
BYTES32(below26<>, 0x9a9a9a9a9a9a9a9a)  // -128+26
BYTES32(below10<>, 0x8a8a8a8a8a8a8a8a)  // -128+10
BYTES32(blankByte<>, 0x2020202020202020)
BYTES32(dashByte<>, 0x2d2d2d2d2d2d2d2d)
BYTES32(underByte<>, 0x5f5f5f5f5f5f5f5f)
BYTES32(plusByte<>, 0x2b2b2b2b2b2b2b2b)
BYTES32(slashByte<>, 0x2f2f2f2f2f2f2f2f)
BYTES32(eqByte<>, 0x3d3d3d3d3d3d3d3d)
BYTES32(colonByte<>, 0x3a3a3a3a3a3a3a3a)
BYTES32(dotByte<>, 0x2e2e2e2e2e2e2e2e)
BYTES32(pctByte<>, 0x2525252525252525)
BYTES32(bslashByte<>, 0x5c5c5c5c5c5c5c5c)

// White space by its low nibble (VPSHUFB): ' ' at 0, '\t' '\n' '\r' at 9,
// 10, 13; 0xff, which no byte below 0x80 equals, elsewhere. A byte from
// 0x80 looks up 0, which it is not either.
DATA spaceTable<>+0(SB)/8, $0xffffffffffffff20
DATA spaceTable<>+8(SB)/8, $0xffff0dffff0a09ff
DATA spaceTable<>+16(SB)/8, $0xffffffffffffff20
DATA spaceTable<>+24(SB)/8, $0xffff0dffff0a09ff
GLOBL spaceTable<>(SB), RODATA|NOPTR, $32

// MASK stores the byte mask of Y into the 32-bit half at off(DI).
#define MASK(Y, off) \
	VPMOVMSKB Y, AX; \
	MOVL AX, off(DI)

// RANGE sets in Y each byte of Y0 that is in a range, add and below
// being its constants (see lowerAdd), and stores its mask at off(DI).
#define RANGE(add, below, Y, off) \
	VPADDB add, Y0, Y; \
	VPCMPGTB Y, below, Y; \
	MASK(Y, off)

// HALF classifies the 32 bytes at in(SI) into the halves at h(DI) (0 or
// 4) of the fields of blockMasks, whose offsets these are.
#define HALF(in, h) \
	VMOVDQU in(SI), Y0; \
	RANGE(Y15, Y12, Y1, h+0); \
	RANGE(Y14, Y12, Y2, h+8); \
	RANGE(Y13, Y11, Y3, h+16); \
	VPSHUFB Y0, Y10, Y4; \
	VPCMPEQB Y0, Y4, Y4; \
	MASK(Y4, h+24); \
	VPCMPEQB Y9, Y0, Y4; \
	MASK(Y4, h+32); \
	MASK(Y0, h+40); \
	VPOR Y1, Y2, Y1; \
	VPOR Y3, Y1, Y1; \
	VPCMPEQB Y8, Y0, Y5; \
	MASK(Y5, h+64); \
	VPCMPEQB Y7, Y0, Y6; \
	MASK(Y6, h+72); \
	VPOR Y5, Y1, Y1; \
	VPOR Y6, Y1, Y1; \
	VPCMPEQB plusByte<>(SB), Y0, Y5; \
	VPCMPEQB slashByte<>(SB), Y0, Y6; \
	VPOR Y5, Y1, Y1; \
	VPOR Y6, Y1, Y1; \
	MASK(Y1, h+48); \
	VPCMPEQB eqByte<>(SB), Y0, Y5; \
	VPCMPEQB colonByte<>(SB), Y0, Y6; \
	VPOR Y5, Y6, Y5; \
	MASK(Y5, h+56); \
	VPCMPEQB dotByte<>(SB), Y0, Y5; \
	MASK(Y5, h+80); \
	VPCMPEQB pctByte<>(SB), Y0, Y6; \
	MASK(Y6, h+88); \
	VPCMPEQB bslashByte<>(SB), Y0, Y5; \
	MASK(Y5, h+96)

// func featureMasksAVX2(p *byte, blocks int, out *blockMasks)
//
// Lower-case (Y1), upper-case (Y2) and digits (Y3) are kept for b64, which
// is them and + / - _ (Y5, Y6 hold a compare on their way to a mask).
TEXT ·featureMasksAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ out+16(FP), DI
	VMOVDQU lowerAdd<>(SB), Y15
	VMOVDQU upperAdd<>(SB), Y14
	VMOVDQU digitAdd<>(SB), Y13
	VMOVDQU below26<>(SB), Y12
	VMOVDQU below10<>(SB), Y11
	VMOVDQU spaceTable<>(SB), Y10
	VMOVDQU blankByte<>(SB), Y9
	VMOVDQU dashByte<>(SB), Y8
	VMOVDQU underByte<>(SB), Y7
	TESTQ CX, CX
	JZ done

loop:
	HALF(0, 0)
	HALF(32, 4)
	ADDQ $64, SI
	ADDQ $104, DI // unsafe.Sizeof(blockMasks{})
	DECQ CX
	JNZ loop

done:
	VZEROUPPER
	RET
