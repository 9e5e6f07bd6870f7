#include "textflag.h"

// func lines(p *byte, n int)
// One PREFETCHT0 per 64-byte line of [p, p+n), plus the line holding the
// last byte (p need not be line-aligned).
TEXT ·lines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	LEAQ -1(AX)(CX*1), CX
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JBE loop
	PREFETCHT0 (CX)
	RET

// func linesW(p *byte, n int)
// As lines, with PREFETCHW: the lines arrive ready to be modified.
// PREFETCHW (0F 0D /1) is in every AMD64 CPU with 3DNow!-prefetch and Intel
// since Broadwell; older Intel cores execute it as a NOP (it is among the
// instructions 64-bit Windows 8.1 requires), so it needs no feature check.
TEXT ·linesW(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	LEAQ -1(AX)(CX*1), CX
loopw:
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08 // PREFETCHW (AX); Go's assembler lacks the mnemonic
	ADDQ $64, AX
	CMPQ AX, CX
	JBE loopw
	BYTE $0x0F; BYTE $0x0D; BYTE $0x09 // PREFETCHW (CX)
	RET
