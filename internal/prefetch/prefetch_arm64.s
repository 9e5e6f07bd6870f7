#include "textflag.h"

// func lines(p *byte, n int)
// One PRFM PLDL1KEEP per 64-byte line of [p, p+n), plus the line holding
// the last byte.
TEXT ·lines(SB), NOSPLIT, $0-16
	MOVD p+0(FP), R0
	MOVD n+8(FP), R1
	ADD  R0, R1, R1
	SUB  $1, R1, R1
loop:
	PRFM (R0), PLDL1KEEP
	ADD  $64, R0, R0
	CMP  R1, R0
	BLS  loop
	PRFM (R1), PLDL1KEEP
	RET

// func linesW(p *byte, n int)
// As lines, with PRFM PSTL1KEEP: the lines arrive ready to be modified.
TEXT ·linesW(SB), NOSPLIT, $0-16
	MOVD p+0(FP), R0
	MOVD n+8(FP), R1
	ADD  R0, R1, R1
	SUB  $1, R1, R1
loopw:
	PRFM (R0), PSTL1KEEP
	ADD  $64, R0, R0
	CMP  R1, R0
	BLS  loopw
	PRFM (R1), PSTL1KEEP
	RET
