package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// graph is an answer of an /analytics/graphs route, in the reference's
// shape: a summary and one data point per time bucket, each a set of
// named figures.
type graph struct {
	Summary    map[string]json.Number `json:"summary"`
	DataPoints []map[string]any       `json:"data_points"`
}

// figure returns the summary figure name, and whether the API gave it.
func (g *graph) figure(name string) (float64, string, bool) {
	n, ok := g.Summary[name]
	if !ok {
		return 0, "", false
	}
	f, err := n.Float64()
	return f, n.String(), err == nil
}

// times returns the data points' bucket starts.
func (g *graph) times() []time.Time {
	ts := make([]time.Time, len(g.DataPoints))
	for i, p := range g.DataPoints {
		s, _ := p["timestamp"].(string)
		ts[i], _ = time.Parse(time.RFC3339Nano, s)
	}
	return ts
}

// values returns the data points' figure name (0 where absent).
func (g *graph) values(name string) []float64 {
	vs := make([]float64, len(g.DataPoints))
	for i, p := range g.DataPoints {
		switch v := p[name].(type) {
		case float64:
			vs[i] = v
		case json.Number:
			vs[i], _ = v.Float64()
		}
	}
	return vs
}

// has reports whether the data points carry figure name.
func (g *graph) has(name string) bool {
	for _, p := range g.DataPoints {
		if _, ok := p[name]; ok {
			return true
		}
	}
	return false
}

// card is one headline figure of the overview.
type card struct {
	ID, Label, Value, Unit string
}

// overviewPage is the data of the overview.
type overviewPage struct {
	Filters filters
	Ranges  []rangeLink
	Cards   []card
	Charts  []*chart
	Missing bool // the gateway serves no analytics
}

// rangeLink is a link to the overview over another range.
type rangeLink struct {
	Label, Href string
	Current     bool
}

// graphRoutes are the analytics routes the overview reads, all with the
// same filters, at once.
var graphRoutes = []string{"requests", "errors/rate", "latency", "tokens", "cost", "cache/hit-rate"}

// overview shows the headline figures and graphs of the analytics routes
// over the chosen range and filters.
func (c *console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	f := readFilters(r.URL.Query(), "24h")
	p := &overviewPage{Filters: f}
	for _, rg := range ranges {
		p.Ranges = append(p.Ranges, rangeLink{Label: rg.Label, Href: f.withRange(c.base+"/", rg.Name), Current: rg.Name == f.Range})
	}
	d := &pageData{Title: "Overview", Nav: "overview", Data: p}
	q, err := f.api(c.opts.Now())
	if err != nil {
		d.Error = err.Error()
		c.render(w, r, statusFor(err), "overview", s, d)
		return
	}
	graphs := make([]graph, len(graphRoutes))
	errs := make([]error, len(graphRoutes))
	var wg sync.WaitGroup
	for i, route := range graphRoutes {
		wg.Go(func() {
			errs[i] = c.callGraph(r, s.key, "/analytics/graphs/"+route, q, &graphs[i])
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			continue
		}
		if c.apiFailed(w, r, s, err) {
			return
		}
		if statusOf(err) == http.StatusNotFound {
			p.Missing = true
			d.Error = "This gateway serves no analytics: " + err.Error()
		} else {
			d.Error = err.Error()
		}
		c.render(w, r, statusFor(err), "overview", s, d)
		return
	}
	p.fill(&graphs[0], &graphs[1], &graphs[2], &graphs[3], &graphs[4], &graphs[5])
	c.render(w, r, http.StatusOK, "overview", s, d)
}

// callGraph reads one analytics graph, keeping its numbers as the API
// wrote them.
func (c *console) callGraph(r *http.Request, key, path string, q url.Values, g *graph) error {
	var raw json.RawMessage
	if err := c.call(r, key, http.MethodGet, path, q, nil, &raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(g); err != nil {
		return &apiError{Status: http.StatusBadGateway, Message: "the answer of " + path + " could not be read: " + err.Error()}
	}
	return nil
}

// fill turns the six graphs into the overview's cards and charts.
func (p *overviewPage) fill(reqs, errRate, lat, tokens, cost, cache *graph) {
	fig := func(g *graph, name string, format func(float64) string) (string, string) {
		f, raw, ok := g.figure(name)
		if !ok {
			return "—", ""
		}
		return format(f), raw
	}
	count := func(f float64) string { return num(f) }
	pct := func(f float64) string { return num(f) + "%" }
	ms := func(f float64) string { return num(f) + " ms" }

	requests, requestsRaw := fig(reqs, "total", count)
	rate, _ := fig(errRate, "rate", pct)
	p50, _ := fig(lat, "p50", ms)
	hi := "p95"
	if _, _, ok := lat.figure("p95"); !ok {
		hi = "p90"
	}
	pHi, _ := fig(lat, hi, ms)
	toks, toksRaw := fig(tokens, "total", count)
	spend, spendRaw := fig(cost, "total", cents)
	hits, _ := fig(cache, "rate", pct)
	p.Cards = []card{
		{ID: "card-requests", Label: "Requests", Value: requests},
		{ID: "card-error-rate", Label: "Error rate", Value: rate},
		{ID: "card-latency-p50", Label: "Latency p50", Value: p50},
		{ID: "card-latency-" + hi, Label: "Latency " + hi, Value: pHi},
		{ID: "card-tokens", Label: "Tokens", Value: toks},
		{ID: "card-cost", Label: "Cost (USD)", Value: spend},
		{ID: "card-cache-hit-rate", Label: "Cache hit rate", Value: hits},
	}

	ch := newChart("requests", "Requests", "requests per bucket", reqs.times(),
		[]series{{Name: "requests", Values: reqs.values("total")}}, count)
	ch.Total, ch.TotalRaw = "Total "+requests, requestsRaw
	p.Charts = append(p.Charts, ch)

	ch = newChart("error-rate", "Error rate", "% of requests", errRate.times(),
		[]series{{Name: "error rate", Values: errRate.values("rate")}}, pct)
	ch.Total = "Overall " + rate
	p.Charts = append(p.Charts, ch)

	var ls []series
	for _, name := range []string{"p50", "p90", "p95", "p99"} {
		if lat.has(name) {
			ls = append(ls, series{Name: name, Values: lat.values(name)})
		}
	}
	ch = newChart("latency", "Latency", "milliseconds", lat.times(), ls, func(f float64) string { return num(f) })
	ch.Total = "p50 " + p50 + ", " + hi + " " + pHi
	p.Charts = append(p.Charts, ch)

	ch = newChart("tokens", "Tokens", "tokens per bucket", tokens.times(),
		[]series{{Name: "tokens", Values: tokens.values("total")}}, count)
	ch.Total, ch.TotalRaw = "Total "+toks, toksRaw
	p.Charts = append(p.Charts, ch)

	ch = newChart("cost", "Cost", "US dollars per bucket", cost.times(),
		[]series{{Name: "cost", Values: cost.values("total")}}, cents)
	ch.Total, ch.TotalRaw = "Total "+spend, spendRaw
	p.Charts = append(p.Charts, ch)

	ch = newChart("cache-hit-rate", "Cache hit rate", "% of requests", cache.times(),
		[]series{{Name: "hit rate", Values: cache.values("rate")}}, pct)
	ch.Total = "Overall " + hits
	p.Charts = append(p.Charts, ch)
}
