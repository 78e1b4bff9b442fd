// Package telemetry holds the service's Prometheus metrics (docs/operations.md#metrics): one
// Metrics per process, created by cmd/supplyplan when the operations listener is configured and
// handed to the parts that record into it. It is the only package that imports
// github.com/VictoriaMetrics/metrics.
//
// Every method is safe on a nil *Metrics (and on the nil instruments it then returns) and does
// nothing: with metrics off the hot paths pay one nil check. Labels are low-cardinality by
// construction: route templates, methods, statuses, kinds and outcomes, Kafka partitions; never a
// tenant id, a key or a raw path.
package telemetry

import (
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

func init() { metrics.ExposeMetadata(true) } // # TYPE lines: Prometheus then knows the histograms

// Metrics is one process's metric set.
type Metrics struct {
	set *metrics.Set

	journalAppend *metrics.PrometheusHistogram
	journalFsync  *metrics.PrometheusHistogram
	journalGroup  *metrics.PrometheusHistogram

	importRowsApplied *metrics.Counter
	importRowsFailed  *metrics.Counter
	importRowRate     *metrics.PrometheusHistogram
	importJobs        map[string]*metrics.Counter // by status
	importRunning     atomic.Int64

	kafkaDLQ     *metrics.Counter
	kafkaFetched *metrics.Counter

	deliveries sync.Map // "target/outcome" -> *metrics.Counter

	forecastComputed *metrics.Counter
	forecastHits     *metrics.Counter

	rateLimited sync.Map // "scope/class" -> *metrics.Counter

	mailbox sync.Map // actor kind -> *atomic.Int64
}

// Latency buckets (seconds) of requests and journal appends: 100 µs to 10 s.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns an empty metric set with the service's families registered.
func New() *Metrics {
	s := metrics.NewSet()
	m := &Metrics{set: s,
		journalAppend:     s.NewPrometheusHistogramExt("supplyplan_journal_append_duration_seconds", latencyBuckets),
		journalFsync:      s.NewPrometheusHistogramExt("supplyplan_journal_fsync_duration_seconds", latencyBuckets),
		journalGroup:      s.NewPrometheusHistogramExt("supplyplan_journal_group_entries", metrics.ExponentialBuckets(1, 2, 14)),
		importRowsApplied: s.NewCounter(`supplyplan_import_rows_total{outcome="applied"}`),
		importRowsFailed:  s.NewCounter(`supplyplan_import_rows_total{outcome="failed"}`),
		importRowRate:     s.NewPrometheusHistogramExt("supplyplan_import_job_rows_per_second", metrics.ExponentialBuckets(100, 4, 9)),
		importJobs:        map[string]*metrics.Counter{},
		kafkaDLQ:          s.NewCounter("supplyplan_kafka_dead_lettered_total"),
		kafkaFetched:      s.NewCounter("supplyplan_kafka_messages_fetched_total"),
		forecastComputed:  s.NewCounter("supplyplan_forecast_computations_total"),
		forecastHits:      s.NewCounter("supplyplan_forecast_cache_hits_total"),
	}
	for _, st := range []string{"PENDING", "COMPLETED", "FAILED"} {
		m.importJobs[st] = s.NewCounter(`supplyplan_import_jobs_total{status="` + st + `"}`)
	}
	s.NewGauge("supplyplan_import_jobs_running", func() float64 { return float64(m.importRunning.Load()) })
	return m
}

// WritePrometheus writes every metric in the Prometheus text format, then the Go runtime's and the
// process's (go_*, process_*).
func (m *Metrics) WritePrometheus(w io.Writer) {
	if m == nil {
		return
	}
	m.set.WritePrometheus(w)
	metrics.WriteProcessMetrics(w)
}

// Gauge registers a gauge read by f at each scrape (name may carry labels: `x{kind="a"}`).
func (m *Metrics) Gauge(name string, f func() float64) {
	if m == nil {
		return
	}
	m.set.GetOrCreateGauge(name, f)
}

// CounterFunc registers a counter read by f at each scrape, for parts that count on their own.
func (m *Metrics) CounterFunc(name string, f func() uint64) {
	if m == nil {
		return
	}
	m.set.RegisterMetricsWriter(func(w io.Writer) { metrics.WriteCounterUint64(w, name, f()) })
}

// statusSlots maps the HTTP statuses the servers answer to a counter slot; 0 is every other status.
var statusSlots = func() (t [600]uint8) {
	for i, s := range []int{200, 201, 202, 204, 206, 301, 302, 304, 400, 401, 403, 404, 405, 406, 409, 410,
		412, 413, 415, 422, 429, 500, 501, 502, 503, 504} {
		t[s] = uint8(i + 1)
	}
	return t
}()

const nSlots = 27

// Route is the request metrics of one route template and method, resolved once when the server is
// built: Observe costs no allocation (a counter per status is created on its first use).
type Route struct {
	set     *metrics.Set
	prefix  string // supplyplan_http_requests_total{server="...",route="...",method="..."
	status  [nSlots]atomic.Pointer[metrics.Counter]
	latency *metrics.PrometheusHistogram
}

// Route returns the metrics of the requests server answers on the route template with method.
func (m *Metrics) Route(server, method, route string) *Route {
	if m == nil {
		return nil
	}
	labels := `{server="` + server + `",route="` + route + `",method="` + method + `"`
	return &Route{set: m.set, prefix: "supplyplan_http_requests_total" + labels,
		latency: m.set.GetOrCreatePrometheusHistogramExt("supplyplan_http_request_duration_seconds"+labels+"}", latencyBuckets)}
}

// Observe counts one answered request.
func (r *Route) Observe(status int, took time.Duration) {
	if r == nil {
		return
	}
	slot := 0
	if status >= 0 && status < len(statusSlots) {
		slot = int(statusSlots[status])
	}
	c := r.status[slot].Load()
	if c == nil {
		label := "other"
		if slot != 0 {
			label = strconv.Itoa(status)
		}
		c = r.set.GetOrCreateCounter(r.prefix + `,status="` + label + `"}`)
		r.status[slot].Store(c)
	}
	c.Inc()
	r.latency.Update(took.Seconds())
}

// RateLimited counts a request refused with 429: scope "key" or "org", class "read", "write" or
// "import".
func (m *Metrics) RateLimited(scope, class string) {
	if m == nil {
		return
	}
	k := scope + "/" + class
	c, ok := m.rateLimited.Load(k)
	if !ok {
		c, _ = m.rateLimited.LoadOrStore(k, m.set.GetOrCreateCounter(`supplyplan_http_rate_limited_total{scope="`+scope+`",class="`+class+`"}`))
	}
	c.(*metrics.Counter).Inc()
}

// Mailbox returns the counter of messages waiting in the mailboxes of the actors of kind
// ("tenant", "platform", "outbound", "loops"), exposed as supplyplan_actor_mailbox_depth. A nil
// Metrics still returns a usable counter (nobody reads it).
func (m *Metrics) Mailbox(kind string) *atomic.Int64 {
	if m == nil {
		return new(atomic.Int64)
	}
	v, ok := m.mailbox.Load(kind)
	if !ok {
		n := new(atomic.Int64)
		if v, ok = m.mailbox.LoadOrStore(kind, n); !ok {
			m.set.NewGauge(`supplyplan_actor_mailbox_depth{kind="`+kind+`"}`, func() float64 { return float64(n.Load()) })
		}
	}
	return v.(*atomic.Int64)
}

// JournalAppend records how long one appended entry waited until it was durable.
func (m *Metrics) JournalAppend(took time.Duration) {
	if m == nil {
		return
	}
	m.journalAppend.Update(took.Seconds())
}

// JournalCommit records one group commit: its entries and how long writing and syncing took.
func (m *Metrics) JournalCommit(entries int, flush time.Duration) {
	if m == nil {
		return
	}
	m.journalGroup.Update(float64(entries))
	m.journalFsync.Update(flush.Seconds())
}

// ImportSubmitted counts an accepted import job.
func (m *Metrics) ImportSubmitted() {
	if m == nil {
		return
	}
	m.importJobs["PENDING"].Inc()
}

// ImportStarted and ImportStopped bracket a running job.
func (m *Metrics) ImportStarted() {
	if m != nil {
		m.importRunning.Add(1)
	}
}

// ImportStopped: see ImportStarted.
func (m *Metrics) ImportStopped() {
	if m != nil {
		m.importRunning.Add(-1)
	}
}

// ImportFinished counts a finished job (status COMPLETED or FAILED), its rows, and its throughput
// (rows processed per second between its start and its end).
func (m *Metrics) ImportFinished(status string, applied, failed, processed int, took time.Duration) {
	if m == nil {
		return
	}
	if c := m.importJobs[status]; c != nil {
		c.Inc()
	}
	m.importRowsApplied.Add(applied)
	m.importRowsFailed.Add(failed)
	if took > 0 && processed > 0 {
		m.importRowRate.Update(float64(processed) / took.Seconds())
	}
}

// KafkaFetched counts messages read from Kafka; KafkaDeadLettered those written to the DLQ.
func (m *Metrics) KafkaFetched(n int) {
	if m != nil {
		m.kafkaFetched.Add(n)
	}
}

// KafkaDeadLettered: see KafkaFetched.
func (m *Metrics) KafkaDeadLettered(n int) {
	if m != nil {
		m.kafkaDLQ.Add(n)
	}
}

// PartitionLag is the consumer lag gauge of one assigned partition.
type PartitionLag struct {
	set  *metrics.Set
	name string
	g    *metrics.Gauge
}

// KafkaPartition returns the lag gauge of an assigned partition of topic; Close it on revocation.
func (m *Metrics) KafkaPartition(topic string, partition int) *PartitionLag {
	if m == nil {
		return nil
	}
	name := `supplyplan_kafka_consumer_lag{topic="` + topic + `",partition="` + strconv.Itoa(partition) + `"}`
	return &PartitionLag{set: m.set, name: name, g: m.set.GetOrCreateGauge(name, nil)}
}

// Set records the messages behind the partition's end as of the last fetch.
func (p *PartitionLag) Set(lag int64) {
	if p != nil {
		p.g.Set(float64(max(lag, 0)))
	}
}

// Close removes the gauge (the partition went to another consumer).
func (p *PartitionLag) Close() {
	if p != nil {
		p.set.UnregisterMetric(p.name)
	}
}

// Delivery counts one recorded delivery attempt of target ("webhook", "alert", ...) by outcome:
// "succeeded", "retrying" (failed, another attempt is scheduled), "failed" (gave up) or
// "cancelled".
func (m *Metrics) Delivery(target, outcome string) {
	if m == nil {
		return
	}
	k := target + "/" + outcome
	c, ok := m.deliveries.Load(k)
	if !ok {
		c, _ = m.deliveries.LoadOrStore(k, m.set.GetOrCreateCounter(`supplyplan_deliveries_total{target="`+target+`",outcome="`+outcome+`"}`))
	}
	c.(*metrics.Counter).Inc()
}

// Forecasts counts the series of one forecast request: hits served from the cache, computed the
// rest.
func (m *Metrics) Forecasts(hits, computed int) {
	if m == nil {
		return
	}
	m.forecastHits.Add(hits)
	m.forecastComputed.Add(computed)
}
