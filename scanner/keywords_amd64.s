#include "textflag.h"

// One stream's step at byte CX: its state r becomes next[r+class[t[CX]]].
// The address of the byte's column, &next[class], does not depend on r:
// computed first, it leaves one load (no add) on the chain from one state
// to the next, which is what the walk waits on.
#define STEP(t, r) \
	MOVBLZX (t)(CX*1), DI; \
	MOVBLZX (BX)(DI*1), DI; \
	LEAQ    (AX)(DI*4), DI; \
	MOVL    (DI)(r*4), r

// func walk4Asm(next *uint32, class *[256]uint8, t0, t1, t2, t3 *byte, i, n int, r *[4]uint32) int
//
// walk4Go's loop with the four states in registers: each stream's step is
// a chain of an add and a load, and the four chains run side by side.
TEXT ·walk4Asm(SB), NOSPLIT, $0-80
	MOVQ next+0(FP), AX
	MOVQ class+8(FP), BX
	MOVQ t0+16(FP), SI
	MOVQ t1+24(FP), R8
	MOVQ t2+32(FP), R9
	MOVQ t3+40(FP), R10
	MOVQ i+48(FP), CX
	MOVQ n+56(FP), DX
	MOVQ r+64(FP), DI
	MOVL 0(DI), R11
	MOVL 4(DI), R12
	MOVL 8(DI), R13
	MOVL 12(DI), R14

loop:
	STEP(SI, R11)
	STEP(R8, R12)
	STEP(R9, R13)
	STEP(R10, R14)
	MOVL    R11, R15
	ORL     R12, R15
	ORL     R13, R15
	ORL     R14, R15
	JMI     done // termBit is the sign bit
	INCQ    CX
	CMPQ    CX, DX
	JLT     loop

done:
	MOVQ r+64(FP), DI
	MOVL R11, 0(DI)
	MOVL R12, 4(DI)
	MOVL R13, 8(DI)
	MOVL R14, 12(DI)
	MOVQ CX, ret+72(FP)
	RET
