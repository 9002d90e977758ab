package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dataValue returns the data-value of the element id of a page.
func dataValue(t *testing.T, p page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`id="` + id + `" data-value="([^"]*)"`).FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no %s on the page", id)
	}
	return m[1]
}

// graphTotal returns the API's summary total of an analytics graph over
// the last hour, as the API wrote it.
func (e *env) graphTotal(key, graph string, extra url.Values) string {
	e.t.Helper()
	end := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	q := url.Values{"time_of_generation_min": {end.Add(-time.Hour).Format(time.RFC3339)},
		"time_of_generation_max": {end.Format(time.RFC3339)}}
	for k, v := range extra {
		q[k] = v
	}
	st, body := e.api(key, "GET", "/analytics/graphs/"+graph+"?"+q.Encode(), "")
	if st != http.StatusOK {
		e.t.Fatalf("GET /analytics/graphs/%s: %d %s", graph, st, body)
	}
	var g struct {
		Summary map[string]json.Number `json:"summary"`
	}
	json.Unmarshal([]byte(body), &g)
	return g.Summary["total"].String()
}

func TestOverviewEqualsAPI(t *testing.T) {
	e := newEnv(t, Options{})
	e.traffic(ws1Key, "vk-1", "one", 5)
	e.traffic(ws2Key, "vk-2", "two", 2)
	b := e.signedIn(ws1Key)
	p := b.get("/console/?range=1h")
	if p.status != http.StatusOK {
		t.Fatalf("overview: %d\n%s", p.status, p.body)
	}
	for _, g := range []struct{ id, graph, want string }{
		{"requests-total", "requests", "5"},
		{"tokens-total", "tokens", ""},
		{"cost-total", "cost", ""},
	} {
		api := e.graphTotal(ws1Key, g.graph, nil)
		if got := dataValue(t, p, g.id); got != api || (g.want != "" && got != g.want) {
			t.Errorf("%s: the console shows %s, the API answers %s (want %q)", g.graph, got, api, g.want)
		}
	}
	if !strings.Contains(p.body, `id="card-requests"><span class="label">Requests</span> <span class="value">5</span>`) {
		t.Error("the requests card does not say 5")
	}
	// Every range renders; each chart has axes labelled and one point
	// per bucket of the API.
	for _, r := range []string{"1h", "24h", "7d", "30d"} {
		p := b.get("/console/?range=" + r)
		if p.status != http.StatusOK || !strings.Contains(p.body, `aria-current="true">`+map[string]string{
			"1h": "Last hour", "24h": "Last 24 hours", "7d": "Last 7 days", "30d": "Last 30 days"}[r]) {
			t.Errorf("range %s: %d, or not marked current", r, p.status)
		}
		if n := strings.Count(p.body, "<polyline"); n < 6 {
			t.Errorf("range %s: %d lines, want one per chart at least", r, n)
		}
		if !strings.Contains(p.body, `text-anchor="end" dominant-baseline="middle">0</text>`) {
			t.Errorf("range %s: no y axis labels", r)
		}
	}
	// The metadata filter: requests of team t1 (2 of the 5).
	p = b.get("/console/?range=1h&meta_key=team&meta_value=t1")
	api := e.graphTotal(ws1Key, "requests", url.Values{"metadata": {`{"team":"t1"}`}})
	if got := dataValue(t, p, "requests-total"); got != api || got != "2" {
		t.Errorf("requests of team t1: the console shows %s, the API answers %s, want 2", got, api)
	}
	// A bad filter is the API's 400, shown.
	if p := b.get("/console/?status_code=999"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "status_code") {
		t.Errorf("bad status_code: %d", p.status)
	}
}

func TestPoliciesUsage(t *testing.T) {
	e := newEnv(t, Options{})
	st, body := e.api(ws1Key, "POST", "/policies/usage-limits",
		`{"name":"Team budget","conditions":[{"key":"api_key","value":"key-ws1"}],"group_by":[{"key":"api_key"}],"type":"tokens","credit_limit":15}`)
	if st != http.StatusOK {
		t.Fatalf("create usage-limits policy: %d %s", st, body)
	}
	e.api(ws1Key, "POST", "/policies/rate-limits",
		`{"name":"Per key","conditions":[{"key":"api_key","value":"key-ws1"}],"group_by":[{"key":"api_key"}],"type":"requests","unit":"rpm","value":1000}`)
	// Spend the budget until the gateway refuses with 412.
	refused := false
	for i := 0; i < 20 && !refused; i++ {
		req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"spend"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", ws1Key)
		req.Header.Set("x-gateway-virtual-key", "vk-1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		refused = res.StatusCode == http.StatusPreconditionFailed
	}
	if !refused {
		t.Fatal("the budget was never exhausted")
	}
	b := e.signedIn(ws1Key)
	p := b.get("/console/policies")
	if p.status != http.StatusOK || !strings.Contains(p.body, "Team budget") || !strings.Contains(p.body, "Per key") {
		t.Fatalf("policies page: %d\n%s", p.status, p.body)
	}
	m := regexp.MustCompile(`(?s)<li class="exhausted">\s*<span class="mono" id="[^"]+">([^<]+)</span>\s*<meter min="0" max="15" value="([0-9.]+)" low="12" high="14.985" optimum="0"`).FindStringSubmatch(p.body)
	if m == nil || !strings.Contains(m[1], "key-ws1") {
		t.Fatalf("no exhausted entity for key-ws1 with a usage bar:\n%s", p.body)
	}
	// The bar's figure is the API's.
	_, body = e.api(ws1Key, "GET", "/policies/usage-limits?page_size=1", "")
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	json.Unmarshal([]byte(body), &list)
	_, body = e.api(ws1Key, "GET", "/policies/usage-limits/"+list.Data[0].ID+"?include_usage=true", "")
	var pol struct {
		Map map[string]struct {
			CurrentUsage json.Number `json:"current_usage"`
		} `json:"value_key_usage_map"`
	}
	json.Unmarshal([]byte(body), &pol)
	if u := pol.Map[m[1]].CurrentUsage.String(); u != m[2] {
		t.Errorf("usage bar %s, the API's current_usage %s", m[2], u)
	}
	// Another workspace sees neither policy.
	if p := e.signedIn(ws2Key).get("/console/policies"); strings.Contains(p.body, "Team budget") || strings.Contains(p.body, "Per key") {
		t.Error("ws-2 sees ws-1's policies")
	}
}
