#include "textflag.h"

// func self() uintptr: the g Go keeps in register g (R28).
TEXT ·self(SB),NOSPLIT,$0-8
	MOVD g, R8
	MOVD R8, ret+0(FP)
	RET
