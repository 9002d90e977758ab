package sqlstore

import (
	"slices"
	"strconv"

	"github.com/modelgateway/gateway/observe"
)

// percentiles is the state of gw_percentiles, the aggregate of integers
// that each SQLite connection has from the time it opens: its value is the
// text "p50 p90 p99" of observe.Percentile (nearest rank, as Postgres's
// percentile_disc), NULL over no row. This is its group's values.
type percentiles struct{ vals []int64 }

// add adds v to the group.
func (p *percentiles) add(v int64) { p.vals = append(p.vals, v) }

// text returns gw_percentiles' value, and false over no row (NULL).
func (p *percentiles) text() (string, bool) {
	if len(p.vals) == 0 {
		return "", false
	}
	slices.Sort(p.vals)
	b := strconv.AppendInt(nil, observe.Percentile(p.vals, 0.5), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, observe.Percentile(p.vals, 0.9), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, observe.Percentile(p.vals, 0.99), 10)
	return string(b), true
}
