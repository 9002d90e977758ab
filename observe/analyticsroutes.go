package observe

import (
	"context"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// analyticsRoute computes the answer of one analytics route.
type analyticsRoute func(rs *Routes, ctx context.Context, ar *analyticsRequest, r *http.Request) (any, error)

// analyticsRoutes are the analytics routes of the reference, by path
// below the prefix; analyticsgraphs.go and analyticsgroups.go hold them.
var analyticsRoutes = map[string]analyticsRoute{
	"/analytics/graphs/requests":               graphRequests,
	"/analytics/graphs/cost":                   graphCost,
	"/analytics/graphs/latency":                graphLatency,
	"/analytics/graphs/tokens":                 graphTokens,
	"/analytics/graphs/users":                  graphUsers,
	"/analytics/graphs/users/requests":         graphUserRequests,
	"/analytics/graphs/errors":                 graphErrors,
	"/analytics/graphs/errors/rate":            graphErrorRate,
	"/analytics/graphs/errors/stacks":          graphErrorStacks,
	"/analytics/graphs/errors/status-codes":    graphErrorStatusCodes,
	"/analytics/graphs/requests/rescued":       graphRescued,
	"/analytics/graphs/cache/hit-rate":         graphCacheHitRate,
	"/analytics/graphs/cache/latency":          graphCacheLatency,
	"/analytics/graphs/feedbacks":              graphFeedbacks,
	"/analytics/graphs/feedbacks/scores":       graphFeedbackScores,
	"/analytics/graphs/feedbacks/weighted":     graphFeedbackWeighted,
	"/analytics/graphs/feedbacks/ai-models":    graphFeedbackModels,
	"/analytics/summary/cache":                 summaryCache,
	"/analytics/groups/users":                  groupUsers,
	"/analytics/groups/ai-models":              groupModels,
	"/analytics/groups/metadata/{metadataKey}": groupMetadata,
}

// analytics serves one analytics route (the observability routes): GET only, with the
// analytics.read scope, over Options.Logs (404 without one). Every figure
// comes from the records GET /logs would return for the same filters
// (see analyticsParams), and a workspace key sees only its workspace's.
//
// The reference types most figures as integers; counts are, but
// percentages, costs (in cents, as the reference has them), averages and
// latencies (ms) are numbers rounded to two decimals, since an integer
// would hide most of them (a request costs a fraction of a cent).
func (rs *Routes) analytics(route analyticsRoute) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !control.Allow(w, r, http.MethodGet) {
			return
		}
		id, ok := control.Scoped(w, r, gateway.ScopeAnalyticsRead, gateway.ScopeAnalyticsRead)
		if !ok {
			return
		}
		if rs.logs == nil {
			gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
				Message: "request logs are not stored on this gateway"})
			return
		}
		ar, err := analyticsParams(r.URL.Query(), id, rs.clock())
		if err != nil {
			gateway.WriteError(w, r, err)
			return
		}
		out, err := route(rs, r.Context(), ar, r)
		if err != nil {
			control.Fail(w, r, rs.errLog, "analytics", err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, out)
	}
}

// obj is a JSON object of an analytics answer.
type obj = map[string]any

// graph is the envelope of a graph route.
func graph(summary obj, points []obj) obj {
	if points == nil {
		points = []obj{}
	}
	return obj{"object": "analytics-graph", "summary": summary, "data_points": points}
}

// aggregate answers a from the gateway's stores.
func (rs *Routes) aggregate(ctx context.Context, a *Aggregation) ([]Aggregate, error) {
	return aggregateLogs(ctx, rs.logs, rs.feedback, a)
}

// overTime returns the figures of the whole window and of each of its
// buckets, empty ones included, in time order.
func (rs *Routes) overTime(ctx context.Context, ar *analyticsRequest, m Measure) (Aggregate, []Aggregate, error) {
	total, err := rs.aggregate(ctx, ar.aggregation(m))
	if err != nil {
		return Aggregate{}, nil, err
	}
	var sum Aggregate
	if len(total) > 0 {
		sum = total[0]
	}
	per, err := rs.aggregate(ctx, ar.aggregation(m, DimTime))
	if err != nil {
		return Aggregate{}, nil, err
	}
	return sum, fillBuckets(ar, per), nil
}

// fillBuckets returns one Aggregate per bucket of ar's window: those of
// per (grouped by DimTime alone) and zeros for the buckets it lacks.
func fillBuckets(ar *analyticsRequest, per []Aggregate) []Aggregate {
	bs := buckets(ar.query.Start, ar.query.End, ar.width)
	out := make([]Aggregate, len(bs))
	j := 0
	for i, t := range bs {
		for j < len(per) && per[j].Time.Before(t) {
			j++
		}
		if j < len(per) && per[j].Time.Equal(t) {
			out[i] = per[j]
		}
		out[i].Time = t
	}
	return out
}

// byBucket returns per (grouped by DimTime and more) split by bucket, for
// every bucket of ar's window, empty ones included.
func byBucket(ar *analyticsRequest, per []Aggregate) ([]time.Time, [][]Aggregate) {
	bs := buckets(ar.query.Start, ar.query.End, ar.width)
	out := make([][]Aggregate, len(bs))
	j := 0
	for i, t := range bs {
		for j < len(per) && per[j].Time.Before(t) {
			j++
		}
		for j < len(per) && per[j].Time.Equal(t) {
			out[i] = append(out[i], per[j])
			j++
		}
	}
	return bs, out
}

// round2 rounds x to two decimals.
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// ratio is a / b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// cents is usd in cents, rounded to two decimals.
func cents(usd float64) float64 { return round2(usd * 100) }

// millis is a duration of us microseconds in milliseconds, rounded to two
// decimals.
func millis(us float64) float64 { return round2(us / 1000) }

// percent is 100 × a / b rounded to two decimals, or 0 when b is 0.
func percent(a, b int64) float64 { return round2(100 * ratio(float64(a), float64(b))) }

// timestamp is t as data points name their bucket.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// pageOfGroups sorts groups by less and returns the page ar asks for.
func pageOfGroups(ar *analyticsRequest, groups []Aggregate, cmp func(a, b *Aggregate) int) []Aggregate {
	slices.SortFunc(groups, func(a, b Aggregate) int { return cmp(&a, &b) })
	return httpapi.Of(groups, httpapi.Page{Size: ar.size, Number: ar.page})
}
