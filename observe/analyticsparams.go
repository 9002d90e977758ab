package observe

import (
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// analyticsRequest is what an analytics route was asked: the filters and
// the time window, resolved.
type analyticsRequest struct {
	query            Query          // Start and End set to the window
	weightedFeedback Range[float64] // weighted_feedback_min / _max
	width            time.Duration  // the buckets' width over the window
	size, page       int            // page_size and current_page, for groups
}

// analyticsWindowDefault is the window of an analytics route given
// neither end: the last day.
const analyticsWindowDefault = 24 * time.Hour

// analyticsBucketsMax bounds the buckets of a graph: ten years of days.
const analyticsBucketsMax = 3660

// analyticsParams reads the parameters of the analytics routes, each a
// 400 naming it when it is not well formed: the filters of logQuery
// (time_of_generation_min / _max; without them the window is the day up
// to now, and without _max it ends now), weighted_feedback_min / _max
// (numbers from −10 to 10), page_size (1–100, default 20) and
// current_page (from 0). The window may span at most 3,660 buckets.
func analyticsParams(v url.Values, id gateway.Identity, now time.Time) (*analyticsRequest, error) {
	ar := &analyticsRequest{}
	rest := make(url.Values, len(v))
	for name, vs := range v {
		if name != "weighted_feedback_min" && name != "weighted_feedback_max" {
			rest[name] = vs
			continue
		}
		if len(vs) != 1 {
			return nil, control.Invalid(name, name+" must be given once")
		}
		f, err := strconv.ParseFloat(vs[0], 64)
		if err != nil || math.IsNaN(f) || f < -10 || f > 10 {
			return nil, control.Invalid(name, name+" must be a number from -10 to 10")
		}
		if name == "weighted_feedback_min" {
			ar.weightedFeedback.Min, ar.weightedFeedback.HasMin = f, true
		} else {
			ar.weightedFeedback.Max, ar.weightedFeedback.HasMax = f, true
		}
	}
	if wf := ar.weightedFeedback; wf.HasMin && wf.HasMax && wf.Min > wf.Max {
		return nil, control.Invalid("weighted_feedback_max", "weighted_feedback_max must not be below weighted_feedback_min")
	}
	q, err := logQuery(rest, id)
	if err != nil {
		return nil, err
	}
	switch {
	case q.End.IsZero() && q.Start.IsZero():
		q.End = now
		q.Start = now.Add(-analyticsWindowDefault)
	case q.End.IsZero():
		q.End = now
		if q.End.Before(q.Start) {
			q.End = q.Start
		}
	case q.Start.IsZero():
		q.Start = q.End.Add(-analyticsWindowDefault)
	}
	ar.width = BucketWidth(q.Start, q.End)
	if q.End.Sub(q.Start) > analyticsBucketsMax*ar.width {
		return nil, control.Invalid("time_of_generation_min", "the window from time_of_generation_min to time_of_generation_max may span at most 3660 days")
	}
	ar.query = *q
	pg, err := control.Page(v)
	if err != nil {
		return nil, err
	}
	ar.size, ar.page = pg.Size, pg.Number
	return ar, nil
}

// aggregation returns the Aggregation of ar's filters grouped by dims.
func (ar *analyticsRequest) aggregation(m Measure, dims ...Dimension) *Aggregation {
	return &Aggregation{Query: ar.query, WeightedFeedback: ar.weightedFeedback, GroupBy: dims, Bucket: ar.width, Measures: m}
}
