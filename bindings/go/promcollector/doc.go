// Package promcollector is a prometheus.Collector (client_golang) for an
// accel.Runtime, for a node that serves its metrics from a registry
// rather than with Runtime.WritePrometheus:
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(promcollector.New(rt))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// It exposes what WritePrometheus writes, family for family: the same
// names, help, types (counter, gauge), labels and values (docs/metrics.md):
// the runtime's families without labels, each open session's with one
// label set, session="<its C id>" and priority="<the weight the
// scheduler uses, 1..1000>". Each Collect is one WritePrometheus
// snapshot, parsed (expfmt) into constant metrics, so a dashboard made
// for the text writer reads the registry unchanged, and what the text
// writer gets right the collector does too: a closed session is gone from
// the next scrape, two open sessions never share a label set (two
// sessions with one vmID get two C ids), a priority beyond 1000 is
// labelled 1000. SessionStats (VMSession.FullStats) is not the source:
// it has neither the runtime's families nor those labels. After
// Runtime.Close the collector sends nothing. It is an unchecked
// collector (Describe sends nothing): sessions, and with them label
// values, come and go between scrapes. Register one per runtime.
//
// # Building without a module proxy
//
// The module has its own go.mod, so package accel stays standard library
// only; it requires client_golang v1.14.0, the version Debian 12 packages
// (golang-github-prometheus-client-golang-dev, which scripts/deps.sh
// installs), and replaces module accel with the parent directory. With a
// module proxy: `go mod tidy`, then `go test`. Without one, Debian's
// package puts the sources of client_golang and what it imports under
// /usr/share/gocode/src, but module-mode replace directives cannot point
// there: a replacement directory needs a go.mod, and
// github.com/matttproud/golang_protobuf_extensions has none. test.sh
// (which `make test-go` runs) builds in GOPATH mode, which Go 1.27 still
// has: GO111MODULE=off, GOPATH=<scratch>:/usr/share/gocode, with
// <scratch>/src/accel a link to bindings/go; it skips with a message
// when the Debian package is missing:
//
//	bindings/go/promcollector/test.sh -race -count=1
package promcollector
