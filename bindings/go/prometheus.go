package accel

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// promMetric is one metric family: its name, type, help and how to read
// its value from a session's stats.
type promMetric struct {
	name, typ, help string
	val             func(*SessionStats) float64
}

var promMetrics = []promMetric{
	{"accel_session_ops_submitted_total", "counter", "Ops accepted into the session's queue.",
		func(s *SessionStats) float64 { return float64(s.Submitted) }},
	{"accel_session_ops_completed_total", "counter", "Ops that ran and returned no error.",
		func(s *SessionStats) float64 { return float64(s.Completed) }},
	{"accel_session_ops_failed_total", "counter", "Ops that ran and returned an error or panicked.",
		func(s *SessionStats) float64 { return float64(s.Failed) }},
	{"accel_session_ops_cancelled_total", "counter", "Ops that never ran: their context ended or the session closed first.",
		func(s *SessionStats) float64 { return float64(s.Cancelled) }},
	{"accel_session_service_seconds_total", "counter", "Time the session's ops ran on the workers.",
		func(s *SessionStats) float64 { return s.Service.Seconds() }},
	{"accel_session_wait_p50_seconds", "gauge", "Median submit-to-start wait over sampled ops (bucket upper edge).",
		func(s *SessionStats) float64 { return s.WaitP50.Seconds() }},
	{"accel_session_wait_p99_seconds", "gauge", "99th percentile submit-to-start wait over sampled ops (bucket upper edge).",
		func(s *SessionStats) float64 { return s.WaitP99.Seconds() }},
	{"accel_session_queue_depth", "gauge", "Ops accepted and not yet started.",
		func(s *SessionStats) float64 { return float64(s.Queued) }},
	{"accel_session_memory_used_bytes", "gauge", "Bytes charged to the session's budget.",
		func(s *SessionStats) float64 { return float64(s.MemoryUsed) }},
	{"accel_session_memory_budget_bytes", "gauge", "The session's memory cap in bytes; 0 = unlimited.",
		func(s *SessionStats) float64 { return float64(s.MemoryBudget) }},
	{"accel_session_priority", "gauge", "The session's scheduling weight.",
		func(s *SessionStats) float64 { return float64(s.Priority) }},
}

// WritePrometheus writes the Prometheus text exposition format (0.0.4) for
// the runtime and every open session, labelled session="<id>", so a node's
// metrics endpoint can serve it as is.
func (rt *Runtime) WritePrometheus(w io.Writer) error {
	sessions := rt.Sessions()
	stats := make([]SessionStats, len(sessions))
	for i, v := range sessions {
		stats[i] = v.FullStats()
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("# HELP accel_runtime_workers Worker threads of the runtime.\n# TYPE accel_runtime_workers gauge\naccel_runtime_workers ")
	bw.WriteString(strconv.Itoa(rt.workers))
	bw.WriteString("\n# HELP accel_runtime_sessions Open sessions.\n# TYPE accel_runtime_sessions gauge\naccel_runtime_sessions ")
	bw.WriteString(strconv.Itoa(len(sessions)))
	bw.WriteByte('\n')
	for _, m := range promMetrics {
		bw.WriteString("# HELP " + m.name + " " + m.help + "\n# TYPE " + m.name + " " + m.typ + "\n")
		for i := range stats {
			bw.WriteString(m.name + `{session="` + promEscape(stats[i].ID) + `"} `)
			bw.WriteString(strconv.FormatFloat(m.val(&stats[i]), 'g', -1, 64))
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

var promEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func promEscape(s string) string { return promEscaper.Replace(s) }
