package accel

// The C runtime is compiled into this package from the repository's own
// sources (csources.c includes ../../runtime/*.c and the backends), so
// `go build` needs no installed libaccel, only liburcu from apt.
// csources_hash.go's define tells Go's build cache when those change.

/*
#cgo CFLAGS: -std=c11 -D_GNU_SOURCE -DACCEL_BUILDING -I${SRCDIR}/../../include -I${SRCDIR}/../../runtime
#cgo LDFLAGS: -lurcu-memb -lurcu-cds -lurcu-common -lpthread -ldl
#include "shim.h"
*/
import "C"
