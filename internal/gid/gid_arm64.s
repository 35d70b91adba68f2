//go:build gc

#include "textflag.h"

// func Current() uintptr
TEXT ·Current(SB),NOSPLIT,$0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET
