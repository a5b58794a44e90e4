/* Compiles runtime/sched_calendar.c into the Go package (cgo builds every .c here). */
#include "../../runtime/sched_calendar.c"
