package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ranges are the time ranges the overview offers, in the order shown.
var ranges = []struct{ Name, Label string }{{"1h", "Last hour"}, {"24h", "Last 24 hours"}, {"7d", "Last 7 days"}, {"30d", "Last 30 days"}}

// rangeDuration returns the length of a named range.
func rangeDuration(name string) (time.Duration, bool) {
	switch name {
	case "1h":
		return time.Hour, true
	case "24h":
		return 24 * time.Hour, true
	case "7d":
		return 7 * 24 * time.Hour, true
	case "30d":
		return 30 * 24 * time.Hour, true
	}
	return 0, false
}

// filters are the analytics filters the overview and the logs pages
// share, as the console's query names them. The API checks them: a bad
// one is shown as the API's 400 message.
type filters struct {
	Range      string // a key of ranges; "" on the logs page: any time
	Status     string // status_code
	Model      string // provider/model pairs, the API's ai_org_model (see apiModels)
	APIKey     string // api_key_ids
	VirtualKey string // virtual_keys
	Config     string // configs
	TraceID    string // trace_id
	MetaKey    string // metadata's key …
	MetaValue  string // … and value
	Workspace  string // workspace_id, for organisation keys
}

// readFilters reads the filters of a console page's query.
func readFilters(q url.Values, defaultRange string) filters {
	g := func(n string) string { return strings.TrimSpace(q.Get(n)) }
	f := filters{Range: g("range"), Status: g("status_code"), Model: g("model"), APIKey: g("api_key_ids"),
		VirtualKey: g("virtual_keys"), Config: g("configs"), TraceID: g("trace_id"), MetaKey: g("meta_key"),
		MetaValue: g("meta_value"), Workspace: g("workspace_id")}
	if f.Model == "" {
		// The API's own syntax, as links before the console said
		// provider/model kept it.
		f.Model = strings.ReplaceAll(g("ai_org_model"), "__", "/")
	}
	if _, ok := rangeDuration(f.Range); !ok {
		f.Range = defaultRange
	}
	return f
}

// apiModels turns the model filter as people write it, comma-separated
// provider/model pairs (openai/gpt-4o, as the logs table shows models),
// into the API's ai_org_model syntax (openai__gpt-4o). A model's own
// name may hold slashes: the provider ends at the first. An entry without
// a provider is a 400 in the page's words.
func apiModels(s string) (string, error) {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		provider, model, ok := strings.Cut(p, "/")
		provider, model = strings.TrimSpace(provider), strings.TrimSpace(model)
		if !ok || provider == "" || model == "" {
			return "", &apiError{Status: http.StatusBadRequest,
				Message: "Model: write each model as provider/model, e.g. openai/gpt-4o, not " + strconv.Quote(p) + "."}
		}
		parts[i] = provider + "__" + model
	}
	return strings.Join(parts, ","), nil
}

// api returns the filters as the API's query parameters, the range
// ending at now, or the 400 of a model filter that names no provider.
func (f filters) api(now time.Time) (url.Values, error) {
	q := url.Values{}
	if d, ok := rangeDuration(f.Range); ok {
		// To the second, the window's end rounded up so that it holds
		// the requests of the current second.
		end := now.UTC().Truncate(time.Second).Add(time.Second)
		q.Set("time_of_generation_min", end.Add(-d).Format(time.RFC3339))
		q.Set("time_of_generation_max", end.Format(time.RFC3339))
	}
	if f.Model != "" {
		m, err := apiModels(f.Model)
		if err != nil {
			return nil, err
		}
		q.Set("ai_org_model", m)
	}
	for _, p := range [][2]string{{"status_code", f.Status}, {"api_key_ids", f.APIKey},
		{"virtual_keys", f.VirtualKey}, {"configs", f.Config}, {"trace_id", f.TraceID}, {"workspace_id", f.Workspace}} {
		if p[1] != "" {
			q.Set(p[0], p[1])
		}
	}
	if f.MetaKey != "" {
		b, _ := json.Marshal(map[string]string{f.MetaKey: f.MetaValue})
		q.Set("metadata", string(b))
	}
	return q, nil
}

// pairs returns the filters as the console's own query, name and value
// in turn, for links that keep them.
func (f filters) pairs() []string {
	return []string{"range", f.Range, "status_code", f.Status, "model", f.Model, "api_key_ids", f.APIKey,
		"virtual_keys", f.VirtualKey, "configs", f.Config, "trace_id", f.TraceID, "meta_key", f.MetaKey,
		"meta_value", f.MetaValue, "workspace_id", f.Workspace}
}

// withRange returns a link to path with f's filters and range r.
func (f filters) withRange(path, r string) string {
	g := f
	g.Range = r
	return link(path, g.pairs()...)
}
