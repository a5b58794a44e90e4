/* Compiles runtime/sched_wfq.c into the Go package (cgo builds every .c here). */
#include "../../runtime/sched_wfq.c"
