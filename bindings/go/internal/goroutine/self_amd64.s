#include "textflag.h"

// func self() uintptr: the g Go keeps in the thread's TLS slot.
TEXT ·self(SB),NOSPLIT,$0-8
	MOVQ (TLS), R8
	MOVQ R8, ret+0(FP)
	RET
