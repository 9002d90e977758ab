package metrics

import (
	"context"
	"slices"
)

// Type is the type of a metric family, as Prometheus names them.
type Type int

// The types of metric families.
const (
	Counter   Type = iota // a value that only goes up
	Gauge                 // a value that goes up and down
	Histogram             // observations counted in buckets, with their sum and count
	Summary               // observations summarised by quantiles, with their sum and count
)

// String returns the name of t in the text format's TYPE line: counter,
// gauge, histogram or summary.
func (t Type) String() string {
	switch t {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	case Histogram:
		return "histogram"
	case Summary:
		return "summary"
	}
	return "untyped"
}

// Family is a snapshot of the metrics that share a name: what one HELP
// and TYPE line head in the text format.
type Family struct {
	Name       string   // the full series name, such as gateway_requests_total
	Help       string   // what the series count
	Type       Type     // the type of every metric of the family
	LabelNames []string // the names of the labels of every metric, in the order written (this package's are sorted); nil for unlabelled metrics

	// Metrics are the family's metrics, ordered by their label values. A
	// family that has none yet (no request made its first series) is
	// still listed, so that a converter can describe it; Handler writes
	// nothing of it.
	Metrics []Metric
}

// Metric is one metric of a Family: its label values and its value, or
// its observations for a histogram or a summary.
type Metric struct {
	LabelValues []string // the values of the Family's LabelNames, in their order

	Value float64 // the value of a counter or a gauge

	Count     uint64     // the observations of a histogram or a summary
	Sum       float64    // their sum
	Buckets   []Bucket   // a histogram's buckets, cumulative, ascending, without +Inf (whose count is Count)
	Quantiles []Quantile // a summary's quantiles, ascending
}

// Bucket is a histogram bucket: how many observations were at most
// UpperBound.
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// Quantile is a summary's quantile: Value is the φ-quantile of the
// observations, φ being Quantile (0 the least, 1 the greatest).
type Quantile struct {
	Quantile float64
	Value    float64
}

// A Gatherer returns a snapshot of the families it exports. Gather is
// called at each scrape, possibly from several goroutines at once; ctx is
// the scrape's. The Collector and what its DroppedLogs, AuthFailures and
// Breakers return are Gatherers, and so is Runtime's.
type Gatherer interface {
	Gather(ctx context.Context) ([]Family, error)
}

// sortMetrics orders ms by their label values, as Prometheus's own
// registries do, so that a scrape reads the same from one time to the
// next.
func sortMetrics(ms []Metric) {
	slices.SortFunc(ms, func(a, b Metric) int { return slices.Compare(a.LabelValues, b.LabelValues) })
}
