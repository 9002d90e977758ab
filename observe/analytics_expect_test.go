package observe_test

import (
	"cmp"
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
)

// expected computes the analytics routes' answers from the records of
// GET /logs and the feedback, written apart from the routes' code so that
// the two check each other.
// wsTrace names a trace of a workspace.
type wsTrace struct{ workspace, trace string }

type expected struct {
	t          *testing.T
	start, end time.Time
	width      time.Duration
	recs       []observe.LogWire // those of the window and the weighted feedback bounds
	fb         map[wsTrace][]observe.Feedback
	size, page int
}

func newExpected(t *testing.T, v url.Values, recs []observe.LogWire, fbs []observe.Feedback, now time.Time) *expected {
	ex := &expected{t: t, end: now, start: now.Add(-24 * time.Hour), fb: map[wsTrace][]observe.Feedback{}, size: 20}
	if s := v.Get("time_of_generation_min"); s != "" {
		ex.start, _ = time.Parse(time.RFC3339Nano, s)
	}
	if s := v.Get("time_of_generation_max"); s != "" {
		ex.end, _ = time.Parse(time.RFC3339Nano, s)
	}
	switch d := ex.end.Sub(ex.start); {
	case d <= time.Hour:
		ex.width = time.Minute
	case d <= 48*time.Hour:
		ex.width = time.Hour
	default:
		ex.width = 24 * time.Hour
	}
	for _, f := range fbs {
		k := wsTrace{f.WorkspaceID, f.TraceID}
		ex.fb[k] = append(ex.fb[k], f)
	}
	wmin, errMin := strconv.ParseFloat(v.Get("weighted_feedback_min"), 64)
	wmax, errMax := strconv.ParseFloat(v.Get("weighted_feedback_max"), 64)
	for _, r := range recs {
		if r.CreatedAt.Before(ex.start) || r.CreatedAt.After(ex.end) {
			continue
		}
		if errMin == nil || errMax == nil {
			fs := ex.feedbackOf(r)
			if len(fs) == 0 {
				continue
			}
			var sum float64
			for _, f := range fs {
				sum += float64(f.Value) * f.Weight
			}
			if mean := sum / float64(len(fs)); errMin == nil && mean < wmin || errMax == nil && mean > wmax {
				continue
			}
		}
		ex.recs = append(ex.recs, r)
	}
	return ex
}

func (ex *expected) feedbackOf(r observe.LogWire) []observe.Feedback {
	if r.TraceID == "" {
		return nil
	}
	return ex.fb[wsTrace{r.WorkspaceID, r.TraceID}]
}

// figures are every measure of a set of records.
type figures struct {
	n, errors, tokens, hits, misses, hitLat int64
	cost, fbWeight                          float64
	lat                                     []int64 // ms
	users                                   map[string]bool
	userReqs, feedbacks, withFeedback       int64
	retryByAttempts                         map[int]int64
	fallback                                int64
	last                                    time.Time
}

func (ex *expected) figures(recs []observe.LogWire) *figures {
	f := &figures{users: map[string]bool{}, retryByAttempts: map[int]int64{}}
	for _, r := range recs {
		f.n++
		if r.ResponseStatusCode >= 400 {
			f.errors++
		}
		f.tokens += r.TotalUnits
		f.cost += r.Cost
		f.lat = append(f.lat, r.ResponseTime)
		switch r.CacheStatus {
		case gateway.CacheHit:
			f.hits++
			f.hitLat += r.ResponseTime
		case gateway.CacheMiss, gateway.CacheRefresh:
			f.misses++
		}
		if u := r.Metadata["_user"]; u != "" {
			f.users[u] = true
			f.userReqs++
		}
		if r.Rescued && r.LastUsedOption > 0 {
			f.fallback++
		} else if r.Rescued {
			f.retryByAttempts[r.Retries]++
		}
		if fs := ex.feedbackOf(r); len(fs) > 0 {
			f.withFeedback++
			for _, fb := range fs {
				f.feedbacks++
				f.fbWeight += float64(fb.Value) * fb.Weight
			}
		}
		if r.CreatedAt.After(f.last) {
			f.last = r.CreatedAt
		}
	}
	slices.Sort(f.lat)
	return f
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func r2(x float64) float64 { return math.Round(x*100) / 100 }

func nearestRank(sorted []int64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return float64(sorted[max(i, 0)])
}

// buckets splits the records by bucket, every bucket of the window.
func (ex *expected) buckets() ([]time.Time, [][]observe.LogWire) {
	var ts []time.Time
	for t := ex.start.UTC().Truncate(ex.width); !t.After(ex.end); t = t.Add(ex.width) {
		ts = append(ts, t)
	}
	per := make([][]observe.LogWire, len(ts))
	for _, r := range ex.recs {
		i := slices.Index(ts, r.CreatedAt.UTC().Truncate(ex.width))
		if i < 0 {
			ex.t.Fatalf("record at %v outside the buckets", r.CreatedAt)
		}
		per[i] = append(per[i], r)
	}
	return ts, per
}

// overTime is a graph of one object per bucket.
func (ex *expected) overTime(summary func(f *figures) map[string]any, point func(f *figures) map[string]any) map[string]any {
	ts, per := ex.buckets()
	var points []any
	for i, t := range ts {
		p := point(ex.figures(per[i]))
		p["timestamp"] = t.Format(time.RFC3339)
		points = append(points, p)
	}
	return map[string]any{"object": "analytics-graph", "summary": summary(ex.figures(ex.recs)), "data_points": points}
}

type jm = map[string]any

func latencyOf(f *figures) jm {
	return jm{"avg": r2(div(float64(sumOf(f.lat)), float64(f.n))), "p50": nearestRank(f.lat, 0.5), "p90": nearestRank(f.lat, 0.9),
		"p99": nearestRank(f.lat, 0.99)}
}

func sumOf(xs []int64) (s int64) {
	for _, x := range xs {
		s += x
	}
	return s
}

// route returns the expected answer of path, normalised through JSON.
func (ex *expected) route(path string) any {
	var out any
	switch strings.TrimPrefix(path, "/analytics/") {
	case "graphs/requests":
		out = ex.overTime(func(f *figures) jm { return jm{"total": f.n} }, func(f *figures) jm { return jm{"total": f.n} })
	case "graphs/cost":
		c := func(f *figures) jm { return jm{"total": r2(f.cost * 100), "avg": r2(div(f.cost, float64(f.n)) * 100)} }
		out = ex.overTime(c, c)
	case "graphs/latency":
		out = ex.overTime(latencyOf, latencyOf)
	case "graphs/tokens":
		c := func(f *figures) jm { return jm{"total": f.tokens, "avg": r2(div(float64(f.tokens), float64(f.n)))} }
		out = ex.overTime(c, c)
	case "graphs/users":
		c := func(f *figures) jm { return jm{"total": len(f.users)} }
		out = ex.overTime(c, c)
	case "graphs/users/requests":
		out = ex.overTime(func(f *figures) jm {
			return jm{"total": f.n, "unique": len(f.users), "avg": r2(div(float64(f.userReqs), float64(len(f.users))))}
		}, func(f *figures) jm { return jm{"avg": r2(div(float64(f.userReqs), float64(len(f.users))))} })
	case "graphs/errors":
		c := func(f *figures) jm { return jm{"total": f.errors} }
		out = ex.overTime(c, c)
	case "graphs/errors/rate":
		c := func(f *figures) jm { return jm{"rate": r2(100 * div(float64(f.errors), float64(f.n)))} }
		out = ex.overTime(c, c)
	case "graphs/errors/stacks":
		out = ex.overTime(func(f *figures) jm { return jm{"total": f.errors} }, func(*figures) jm { return jm{} })
		ts, per := ex.buckets()
		for i := range ts {
			stats := []any{}
			for _, c := range statusCounts(per[i]) {
				stats = append(stats, jm{"response_status_code": c[0], "count": c[1]})
			}
			out.(jm)["data_points"].([]any)[i].(jm)["stats"] = stats
		}
	case "graphs/errors/status-codes":
		points := []any{}
		cs := statusCounts(ex.recs)
		for _, c := range cs {
			points = append(points, jm{"status_code": c[0], "count": c[1]})
		}
		out = jm{"object": "analytics-graph", "summary": jm{"total_errors": ex.figures(ex.recs).errors, "unique_error_codes": len(cs)},
			"data_points": points}
	case "graphs/requests/rescued":
		out = ex.overTime(func(f *figures) jm {
			var retry int64
			for _, n := range f.retryByAttempts {
				retry += n
			}
			return jm{"retry": retry, "fallback": f.fallback}
		}, func(f *figures) jm {
			retry := []any{}
			for _, a := range slices.Sorted(mapsKeys(f.retryByAttempts)) {
				retry = append(retry, jm{"retry_success_count": a, "count": f.retryByAttempts[a]})
			}
			return jm{"retry": retry, "fallback": f.fallback}
		})
	case "graphs/cache/hit-rate":
		out = ex.overTime(func(f *figures) jm {
			return jm{"total": f.hits, "rate": r2(100 * div(float64(f.hits), float64(f.hits+f.misses)))}
		}, func(f *figures) jm {
			return jm{"simple_hits": f.hits, "semantic_hits": 0, "rate": r2(100 * div(float64(f.hits), float64(f.hits+f.misses))),
				"cumulative_simple_cache_savings": 0, "cumulative_semantic_cache_savings": 0}
		})
	case "graphs/cache/latency":
		c := func(f *figures) jm { return jm{"avg": r2(div(float64(f.hitLat), float64(f.hits)))} }
		out = ex.overTime(c, c)
	case "summary/cache":
		f := ex.figures(ex.recs)
		out = jm{"object": "analytics-summary", "summary": jm{"hits": f.hits, "avg_latency": r2(div(float64(f.hitLat), float64(f.hits))),
			"total_requests": f.n, "cache_speedup": 0}}
	case "graphs/feedbacks":
		c := func(f *figures) jm { return jm{"total": f.feedbacks} }
		out = ex.overTime(c, c)
	case "graphs/feedbacks/weighted":
		c := func(f *figures) jm { return jm{"avg": r2(div(f.fbWeight, float64(f.feedbacks)))} }
		out = ex.overTime(c, c)
	case "graphs/feedbacks/scores":
		counts := map[int]int64{}
		var total int64
		for _, r := range ex.recs {
			for _, f := range ex.feedbackOf(r) {
				counts[f.Value]++
				total++
			}
		}
		var points []any
		for v := -10; v <= 10; v++ {
			points = append(points, jm{"score": v, "total": counts[v]})
		}
		out = jm{"object": "analytics-graph", "summary": jm{"total": total}, "data_points": points}
	case "graphs/feedbacks/ai-models":
		out = ex.groups(func(r observe.LogWire) (string, bool) { return r.AIOrg + "\x00" + r.AIModel, true }, false,
			func(name string, f *figures) jm {
				if f.feedbacks == 0 {
					return nil
				}
				org, model, _ := strings.Cut(name, "\x00")
				return jm{"ai_model": model, "ai_org": org, "total": f.feedbacks, "avg_weighted_feedback": r2(div(f.fbWeight, float64(f.feedbacks)))}
			})
	case "groups/users":
		out = ex.groups(func(r observe.LogWire) (string, bool) { v, ok := r.Metadata["_user"]; return v, ok }, true, func(name string, f *figures) jm {
			return jm{"object": "analytics-group", "user": name, "requests": strconv.FormatInt(f.n, 10),
				"cost": strconv.FormatFloat(r2(f.cost*100), 'f', -1, 64)}
		})
	case "groups/ai-models":
		out = ex.groups(func(r observe.LogWire) (string, bool) { return r.AIOrg + "\x00" + r.AIModel, true }, true, func(name string, f *figures) jm {
			org, model, _ := strings.Cut(name, "\x00")
			return jm{"object": "analytics-group", "ai_model": model, "ai_org": org, "requests": strconv.FormatInt(f.n, 10)}
		})
	case "groups/metadata/team":
		out = ex.groups(func(r observe.LogWire) (string, bool) { v, ok := r.Metadata["team"]; return v, ok }, true, func(name string, f *figures) jm {
			return jm{"object": "analytics-group", "metadata_value": name, "requests": f.n, "cost": r2(f.cost * 100),
				"avg_tokens": r2(div(float64(f.tokens), float64(f.n))), "avg_weighted_feedback": r2(div(f.fbWeight, float64(f.feedbacks))),
				"requests_with_feedback": f.withFeedback, "last_seen": f.last.UTC().Format("2006-01-02T15:04:05.999999Z07:00")}
		})
	default:
		ex.t.Fatalf("no expectation for %s", path)
	}
	b, _ := json.Marshal(out)
	var v any
	json.Unmarshal(b, &v)
	return v
}

// groups groups the records by key (a record without one is left out),
// ordered by requests, most first, then by name;
// list says the answer is a list of groups rather than a graph (whose
// points are those item gives, in the order of their totals).
func (ex *expected) groups(key func(observe.LogWire) (string, bool), list bool, item func(string, *figures) jm) any {
	by := map[string][]observe.LogWire{}
	for _, r := range ex.recs {
		if k, ok := key(r); ok {
			by[k] = append(by[k], r)
		}
	}
	type g struct {
		name string
		f    *figures
	}
	var gs []g
	for k, recs := range by {
		gs = append(gs, g{k, ex.figures(recs)})
	}
	slices.SortFunc(gs, func(a, b g) int {
		if list {
			if c := cmp.Compare(b.f.n, a.f.n); c != 0 {
				return c
			}
		} else if c := cmp.Compare(b.f.feedbacks, a.f.feedbacks); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	items := []any{}
	for _, x := range gs {
		if it := item(x.name, x.f); it != nil {
			items = append(items, it)
		}
	}
	if !list {
		return jm{"object": "analytics-graph", "summary": jm{}, "data_points": items}
	}
	total := len(items)
	items = items[min(len(items), ex.page*ex.size):min(len(items), (ex.page+1)*ex.size)]
	return jm{"object": "list", "total": total, "data": items}
}

// statusCounts counts the errors (status ≥ 400) by status, ascending.
func statusCounts(recs []observe.LogWire) [][2]int64 {
	counts := map[int]int64{}
	for _, r := range recs {
		if r.ResponseStatusCode >= 400 {
			counts[r.ResponseStatusCode]++
		}
	}
	var out [][2]int64
	for _, s := range slices.Sorted(mapsKeys(counts)) {
		out = append(out, [2]int64{int64(s), counts[s]})
	}
	return out
}

func mapsKeys[V any](mp map[int]V) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range mp {
			if !yield(k) {
				return
			}
		}
	}
}
