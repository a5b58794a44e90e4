package promcollector

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"accel"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Collector is a prometheus.Collector over one accel.Runtime: each
// Collect is one Runtime.WritePrometheus snapshot, handed to the registry
// as constant metrics with the text's names, help, types, labels and
// values.
type Collector struct {
	rt *accel.Runtime

	mu    sync.Mutex
	descs map[string]*prometheus.Desc // by family name and label names
}

// New returns the collector of rt's metrics. Register it once per
// runtime (two collectors of one runtime would write each series twice,
// which Gather reports).
func New(rt *accel.Runtime) *Collector {
	return &Collector{rt: rt, descs: map[string]*prometheus.Desc{}}
}

var errDesc = prometheus.NewDesc("accel_collector_error",
	"The accel collector could not read the runtime's metrics.", nil, nil)

// Describe sends nothing: the collector is unchecked (the registry takes
// its families as Collect finds them), since the sessions, and with them
// the label values, come and go between scrapes.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the runtime's metrics: nothing once the runtime is
// closed; an invalid metric (Gather returns its error) if they cannot be
// read.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	var buf bytes.Buffer
	if err := c.rt.WritePrometheus(&buf); err != nil {
		if !errors.Is(err, accel.ErrRuntimeClosed) {
			ch <- prometheus.NewInvalidMetric(errDesc, err)
		}
		return
	}
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(errDesc, fmt.Errorf("parsing WritePrometheus: %w", err))
		return
	}
	for name, f := range families {
		var vt prometheus.ValueType
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			vt = prometheus.CounterValue
		case dto.MetricType_GAUGE:
			vt = prometheus.GaugeValue
		case dto.MetricType_UNTYPED:
			vt = prometheus.UntypedValue
		default:
			ch <- prometheus.NewInvalidMetric(errDesc,
				fmt.Errorf("family %s: type %v not handled", name, f.GetType()))
			continue
		}
		for _, m := range f.Metric {
			names := make([]string, len(m.Label))
			values := make([]string, len(m.Label))
			for i, l := range m.Label {
				names[i], values[i] = l.GetName(), l.GetValue()
			}
			var v float64
			switch vt {
			case prometheus.CounterValue:
				v = m.GetCounter().GetValue()
			case prometheus.GaugeValue:
				v = m.GetGauge().GetValue()
			default:
				v = m.GetUntyped().GetValue()
			}
			cm, err := prometheus.NewConstMetric(c.desc(name, f.GetHelp(), names), vt, v, values...)
			if err != nil {
				cm = prometheus.NewInvalidMetric(errDesc, err)
			}
			ch <- cm
		}
	}
}

// desc returns the one Desc of a family with these label names.
func (c *Collector) desc(name, help string, labels []string) *prometheus.Desc {
	key := name + "\xff" + help + "\xff" + strings.Join(labels, "\xff")
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.descs[key]
	if d == nil {
		d = prometheus.NewDesc(name, help, labels, nil)
		c.descs[key] = d
	}
	return d
}
