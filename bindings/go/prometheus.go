package accel

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// goCounted are the families whose values the Go side knows better than
// the C library: C sees one op per group (SubmitAsyncBatch, combined
// SubmitAsyncs) and counts an op whose ctx ended while it was queued as
// completed (the worker only skips it); the Go counters count each f.
var goCounted = []struct {
	name, help string
	val        func(*VMSession) uint64
}{
	{"accel_session_ops_submitted_total", "Ops accepted into the session's queue.",
		func(v *VMSession) uint64 { return v.submitted.Load() }},
	{"accel_session_ops_completed_total", "Ops that ran and returned no error.",
		func(v *VMSession) uint64 { return v.completed.Load() }},
	{"accel_session_ops_failed_total", "Ops that ran and returned an error or panicked.",
		func(v *VMSession) uint64 { return v.failed.Load() }},
	{"accel_session_ops_cancelled_total", "Ops that never ran: their context ended or the session closed first.",
		func(v *VMSession) uint64 { return v.canceled.Load() }},
}

// WritePrometheus writes the Prometheus text exposition format (0.0.4) for
// the runtime and every open session, so a node's metrics endpoint can
// serve it as is: the C library's own writer (accel_runtime_write_prometheus:
// workers, parks, visits; per session, labelled session and priority:
// service seconds, wait p50/p99, queue depth, memory used and budget),
// with the ops submitted/completed/failed/canceled counted per Go op.
// A session's series all carry one label set: the priority label is the
// weight the scheduler uses (clamped to 1..1000), not the value given.
func (rt *Runtime) WritePrometheus(w io.Writer) error {
	text, err := rt.cPrometheus()
	if err != nil {
		return err
	}
	sessions, labels := rt.promSessions()
	// One session, one label set: each Go family's priority label is the
	// one the C families give the session in this text (the weight the
	// scheduler uses, clamped to 1..1000, from the C writer's one snapshot
	// of it), else the session's clamped weight (a session without a C
	// side, or opened after the C text was written).
	cprio := cPriorityLabels(text)
	prio := make([]string, len(sessions))
	for k, v := range sessions {
		prio[k] = cprio[promEscape(labels[k])]
		if prio[k] == "" {
			prio[k] = strconv.FormatInt(v.priority.Load(), 10)
		}
	}
	bw := bufio.NewWriter(w)
	for len(text) > 0 {
		// One family: from its "# HELP" line to the next one.
		end := bytes.Index(text[1:], []byte("\n# HELP "))
		block := text
		if end >= 0 {
			block, text = text[:end+2], text[end+2:]
		} else {
			text = nil
		}
		replaced := false
		for _, f := range goCounted {
			if bytes.HasPrefix(block, []byte("# HELP "+f.name+" ")) {
				bw.WriteString("# HELP " + f.name + " " + f.help + "\n# TYPE " + f.name + " counter\n")
				for k, v := range sessions {
					bw.WriteString(f.name + `{session="` + promEscape(labels[k]) + `",priority="` +
						prio[k] + `"} ` + strconv.FormatUint(f.val(v), 10) + "\n")
				}
				replaced = true
				break
			}
		}
		if !replaced {
			bw.Write(block)
		}
	}
	return bw.Flush()
}

// cPriorityLabels maps each escaped session label in text (the C
// writer's) to the priority label its first series has. A label value
// holds no bare '"' (the writer escapes it as \"), so the first one ends
// it.
func cPriorityLabels(text []byte) map[string]string {
	m := map[string]string{}
	open := []byte(`{session="`)
	for {
		i := bytes.Index(text, open)
		if i < 0 {
			return m
		}
		text = text[i+len(open):]
		end := -1
		for j := 0; j < len(text); j++ {
			if text[j] == '\\' {
				j++
			} else if text[j] == '"' {
				end = j
				break
			}
		}
		const pri = `",priority="`
		if end < 0 || !bytes.HasPrefix(text[end:], []byte(pri)) {
			continue
		}
		label := text[:end]
		text = text[end+len(pri):]
		if k := bytes.IndexByte(text, '"'); k >= 0 {
			if _, ok := m[string(label)]; !ok { // no copy for the lookup
				m[string(label)] = string(text[:k])
			}
			text = text[k:]
		}
	}
}

// promSessions returns the open sessions and their session labels: for
// each session with a C side, its C id, as the C families label it, so
// that each session's series share one label and, as openC picks C ids
// whose labels differ, no two sessions share one (a vmID that cannot be
// its C id as is gets a derived one: a prefix of it and "#N"); the
// runtime's own sessions (DefaultSession's, which Sessions leaves out)
// come after the user's. A session whose backend is unavailable has no C
// id: its vmID, with "#N" added if that label is taken.
func (rt *Runtime) promSessions() ([]*VMSession, []string) {
	listed := rt.Sessions()
	rt.mu.Lock()
	var own []*VMSession
	for v := range rt.all {
		if !v.closed.Load() && !rt.listed(v) {
			own = append(own, v)
		}
	}
	rt.mu.Unlock()
	sessions := make([]*VMSession, 0, len(listed)+len(own))
	labels := make([]string, 0, len(listed)+len(own))
	taken := make(map[string]bool, len(listed)+len(own))
	var noC []*VMSession
	for _, v := range append(listed, own...) {
		if v.cid == "" {
			noC = append(noC, v)
			continue
		}
		sessions = append(sessions, v)
		labels = append(labels, v.cid)
		taken[promEscape(v.cid)] = true
	}
	for _, v := range noC {
		label := v.id
		for n := 1; taken[promEscape(label)]; n++ {
			label = v.id + "#" + strconv.Itoa(n)
		}
		taken[promEscape(label)] = true
		sessions = append(sessions, v)
		labels = append(labels, label)
	}
	return sessions, labels
}

// cPrometheus returns accel_runtime_write_prometheus's text.
func (rt *Runtime) cPrometheus() ([]byte, error) {
	buf := make([]byte, 16<<10)
	for {
		var n C.size_t
		if !rt.g.enter() {
			return nil, ErrRuntimeClosed
		}
		rc := int(C.accel_runtime_write_prometheus(rt.c, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &n))
		rt.g.exit()
		if rc != C.ACCEL_OK {
			return nil, statusErr(rc)
		}
		if int(n) <= len(buf) {
			return buf[:n], nil
		}
		buf = make([]byte, int(n)+4096) // sessions may open meanwhile
	}
}

// promEscape is a label value as the C writer writes one (put_label,
// docs/metrics.md): backslash, double quote and newline escaped, each
// byte that does not begin a well-formed UTF-8 sequence replaced with
// U+FFFD (utf8.DecodeRuneInString's RuneError of width 1: overlong forms,
// surrogates and truncated sequences included), other bytes kept. A NUL,
// which a C id cannot hold but a Go id can, is replaced with U+FFFD too.
func promEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && n == 1, c == 0:
			b.WriteString("\uFFFD")
		case c == '\\':
			b.WriteString(`\\`)
		case c == '"':
			b.WriteString(`\"`)
		case c == '\n':
			b.WriteString(`\n`)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
