package observe

import (
	"cmp"
	"context"
	"net/http"
	"slices"
)

// The graph routes of the reference, each over the time buckets of its
// window (see analyticsRoutes and Gateway.analytics).

func graphRequests(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, 0)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "total": b.Requests}
	}
	return graph(obj{"total": sum.Requests}, points), nil
}

func graphCost(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureCost)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "total": cents(b.Cost), "avg": cents(ratio(b.Cost, float64(b.Requests)))}
	}
	return graph(obj{"total": cents(sum.Cost), "avg": cents(ratio(sum.Cost, float64(sum.Requests)))}, points), nil
}

func latencyFigures(a *Aggregate) obj {
	return obj{"avg": millis(ratio(float64(a.Latency), float64(a.Requests))),
		"p50": millis(float64(a.LatencyP50)), "p90": millis(float64(a.LatencyP90)), "p99": millis(float64(a.LatencyP99))}
}

func graphLatency(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureLatency)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i := range per {
		points[i] = latencyFigures(&per[i])
		points[i]["timestamp"] = timestamp(per[i].Time)
	}
	return graph(latencyFigures(&sum), points), nil
}

func graphTokens(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureTokens)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "total": b.TotalTokens,
			"avg": round2(ratio(float64(b.TotalTokens), float64(b.Requests)))}
	}
	return graph(obj{"total": sum.TotalTokens, "avg": round2(ratio(float64(sum.TotalTokens), float64(sum.Requests)))}, points), nil
}

func graphUsers(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureUsers)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "total": b.Users}
	}
	return graph(obj{"total": sum.Users}, points), nil
}

// graphUserRequests gives the requests per user: of the requests that
// name a user (metadata _user), per distinct user.
func graphUserRequests(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureUsers)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "avg": round2(ratio(float64(b.UserRequests), float64(b.Users)))}
	}
	return graph(obj{"total": sum.Requests, "unique": sum.Users,
		"avg": round2(ratio(float64(sum.UserRequests), float64(sum.Users)))}, points), nil
}

func graphErrors(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureErrors)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "total": b.Errors}
	}
	return graph(obj{"total": sum.Errors}, points), nil
}

func graphErrorRate(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureErrors)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "rate": percent(b.Errors, b.Requests)}
	}
	return graph(obj{"rate": percent(sum.Errors, sum.Requests)}, points), nil
}

// graphErrorStacks gives each bucket's errors (status 400 and above) by
// status code, ascending.
func graphErrorStacks(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	per, err := rs.aggregate(ctx, ar.aggregation(MeasureErrors, DimTime, DimStatus))
	if err != nil {
		return nil, err
	}
	var total int64
	bs, groups := byBucket(ar, per)
	points := make([]obj, len(bs))
	for i, t := range bs {
		stats := []obj{}
		for _, a := range groups[i] {
			if a.Status >= 400 {
				stats = append(stats, obj{"response_status_code": a.Status, "count": a.Requests})
				total += a.Requests
			}
		}
		points[i] = obj{"timestamp": timestamp(t), "stats": stats}
	}
	return graph(obj{"total": total}, points), nil
}

// graphErrorStatusCodes gives the window's errors by status code,
// ascending.
func graphErrorStatusCodes(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	per, err := rs.aggregate(ctx, ar.aggregation(MeasureErrors, DimStatus))
	if err != nil {
		return nil, err
	}
	var total, codes int64
	points := []obj{}
	for _, a := range per {
		if a.Status >= 400 {
			points = append(points, obj{"status_code": a.Status, "count": a.Requests})
			total += a.Requests
			codes++
		}
	}
	return graph(obj{"total_errors": total, "unique_error_codes": codes}, points), nil
}

// graphRescued gives the rescued requests of each bucket: by a fallback,
// and by retries of the first target, by the number of retries made.
func graphRescued(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	per, err := rs.aggregate(ctx, ar.aggregation(MeasureRescued, DimTime, DimAttempts))
	if err != nil {
		return nil, err
	}
	var retry, fallback int64
	bs, groups := byBucket(ar, per)
	points := make([]obj, len(bs))
	for i, t := range bs {
		retries := []obj{}
		var fb int64
		for _, a := range groups[i] {
			if a.RescuedRetry > 0 {
				retries = append(retries, obj{"retry_success_count": a.Attempts, "count": a.RescuedRetry})
				retry += a.RescuedRetry
			}
			fb += a.RescuedFallback
		}
		fallback += fb
		points[i] = obj{"timestamp": timestamp(t), "retry": retries, "fallback": fb}
	}
	return graph(obj{"retry": retry, "fallback": fallback}, points), nil
}

// graphCacheHitRate gives the cache hits and the hit rate (hits among the
// requests that asked the cache: HIT, MISS and REFRESH). The gateway has
// no semantic cache, and a hit's record carries no cost to count as
// saved: those figures are 0.
func graphCacheHitRate(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureCache)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "simple_hits": b.CacheHits, "semantic_hits": 0,
			"rate": percent(b.CacheHits, b.CacheHits+b.CacheMisses), "cumulative_simple_cache_savings": 0,
			"cumulative_semantic_cache_savings": 0}
	}
	return graph(obj{"total": sum.CacheHits, "rate": percent(sum.CacheHits, sum.CacheHits+sum.CacheMisses)}, points), nil
}

// graphCacheLatency gives the mean latency of cache hits.
func graphCacheLatency(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureCache)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "avg": millis(ratio(float64(b.CacheHitLatency), float64(b.CacheHits)))}
	}
	return graph(obj{"avg": millis(ratio(float64(sum.CacheHitLatency), float64(sum.CacheHits)))}, points), nil
}

// summaryCache gives the window's cache hits, their mean latency, the
// requests, and how much faster a hit was than a miss, in percent of the
// miss's mean latency.
func summaryCache(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	total, err := rs.aggregate(ctx, ar.aggregation(MeasureCache))
	if err != nil {
		return nil, err
	}
	var a Aggregate
	if len(total) > 0 {
		a = total[0]
	}
	hit := ratio(float64(a.CacheHitLatency), float64(a.CacheHits))
	miss := ratio(float64(a.CacheMissLatency), float64(a.CacheMisses))
	speedup := 0.0
	if a.CacheHits > 0 && miss > 0 {
		speedup = round2(100 * (miss - hit) / miss)
	}
	return obj{"object": "analytics-summary", "summary": obj{"hits": a.CacheHits, "avg_latency": millis(hit),
		"total_requests": a.Requests, "cache_speedup": speedup}}, nil
}

func graphFeedbacks(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureFeedback)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "total": b.Feedbacks}
	}
	return graph(obj{"total": sum.Feedbacks}, points), nil
}

// graphFeedbackScores gives the feedback by value, every value from −10
// to 10.
func graphFeedbackScores(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	per, err := rs.aggregate(ctx, ar.aggregation(MeasureFeedback, DimFeedbackValue))
	if err != nil {
		return nil, err
	}
	var total int64
	points := make([]obj, 0, 21)
	for v := -10; v <= 10; v++ {
		var n int64
		if i := slices.IndexFunc(per, func(a Aggregate) bool { return a.FeedbackValue == v }); i >= 0 {
			n = per[i].Feedbacks
		}
		total += n
		points = append(points, obj{"score": v, "total": n})
	}
	return graph(obj{"total": total}, points), nil
}

func graphFeedbackWeighted(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	sum, per, err := rs.overTime(ctx, ar, MeasureFeedback)
	if err != nil {
		return nil, err
	}
	points := make([]obj, len(per))
	for i, b := range per {
		points[i] = obj{"timestamp": timestamp(b.Time), "avg": round2(ratio(b.FeedbackWeight, float64(b.Feedbacks)))}
	}
	return graph(obj{"avg": round2(ratio(sum.FeedbackWeight, float64(sum.Feedbacks)))}, points), nil
}

// graphFeedbackModels gives the feedback of each model's requests, the
// most first (then by provider and model).
func graphFeedbackModels(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	per, err := rs.aggregate(ctx, ar.aggregation(MeasureFeedback, DimModel))
	if err != nil {
		return nil, err
	}
	per = slices.DeleteFunc(per, func(a Aggregate) bool { return a.Feedbacks == 0 })
	slices.SortStableFunc(per, func(a, b Aggregate) int { return cmp.Compare(b.Feedbacks, a.Feedbacks) })
	points := make([]obj, len(per))
	for i, a := range per {
		points[i] = obj{"ai_model": a.Model, "ai_org": a.Provider, "total": a.Feedbacks,
			"avg_weighted_feedback": round2(ratio(a.FeedbackWeight, float64(a.Feedbacks)))}
	}
	return graph(obj{}, points), nil
}
