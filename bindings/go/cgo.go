package accel

// The C runtime is compiled into this package from the repository's own
// sources (the c_*.c files include ../../runtime/*.c and the CPU backend),
// so `go build` needs no installed libaccel, only liburcu from apt.

/*
#cgo CFLAGS: -std=c11 -D_GNU_SOURCE -DACCEL_BUILDING -I${SRCDIR}/../../include -I${SRCDIR}/../../runtime
#cgo LDFLAGS: -lurcu-memb -lurcu-cds -lurcu-common -lpthread -ldl
#include "shim.h"
*/
import "C"
