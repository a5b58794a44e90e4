// Promises: none

package accel

// Switches of one runtime for the tests (plain Go: they set fields that
// only these setters set).

// setCombineForTest switches the combining of SubmitAsyncs into groups
// on or off for rt alone, so that a benchmark can compare the two in one
// binary without touching other runtimes. Call it before rt's first
// session opens: SubmitAsync reads the setting without synchronization.
func (rt *Runtime) setCombineForTest(on bool) { rt.noCombine = !on }

// setOwnForTest switches Submit's direct hand-off on or off for rt alone
// (off: every f of a Submit runs on a host worker, as the tests of
// blocked host workers need). Call it before rt's first session opens, as
// setCombineForTest.
func (rt *Runtime) setOwnForTest(on bool) { rt.noOwn = !on }

// stopWorkersForTest stops rt's host workers and takes its helper
// workers, as Runtime.Close does once its sessions are drained, but with
// them open: what is submitted from here on stays queued until
// destroyForTest's accel_runtime_destroy runs it on its own thread.
func (rt *Runtime) stopWorkersForTest() { rt.host.stop() }
