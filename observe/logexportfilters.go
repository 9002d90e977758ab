package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// Bounds of a log export.
const (
	exportPageSizeMax = 50000     // the reference's page_size: at most, and by default, this many records
	exportScanMax     = 1_000_000 // current_page × page_size + page_size, at most
)

// filterKind is the JSON type an export filter takes.
type filterKind int

const (
	filterString filterKind = iota // a JSON string (a number is taken as its text)
	filterNumber                   // a JSON number (a string is taken as the number it holds)
	filterObject                   // a JSON object (metadata)
)

// exportFilterKinds are the filters of an export body: the reference's
// GenerationsFilterSchema, plus the GET /logs parameters it lacks
// (api_key_ids, span_id). Every one but ai_model, page_size and
// current_page means what the GET /logs parameter of its name means, and
// is refused or ignored as GET /logs refuses or ignores it.
var exportFilterKinds = map[string]filterKind{
	"time_of_generation_min": filterString, "time_of_generation_max": filterString,
	"total_units_min": filterNumber, "total_units_max": filterNumber,
	"cost_min": filterNumber, "cost_max": filterNumber,
	"prompt_token_min": filterNumber, "prompt_token_max": filterNumber,
	"completion_token_min": filterNumber, "completion_token_max": filterNumber,
	"weighted_feedback_min": filterNumber, "weighted_feedback_max": filterNumber,
	"ai_model": filterString, "ai_org_model": filterString, "status_code": filterString,
	"metadata": filterObject, "virtual_keys": filterString, "trace_id": filterString,
	"configs": filterString, "api_key_ids": filterString, "span_id": filterString,
	"workspace_slug": filterString, "prompt_slug": filterString,
	"page_size": filterNumber, "current_page": filterNumber,
}

// exportFilter is what an export's filters select: the records of Query
// (whose Limit and After the job sets) whose model is one of Models (all
// when empty), of which the first Skip are passed over and at most Limit
// written.
type exportFilter struct {
	Query       *Query
	Models      []string // ai_model
	Skip, Limit int
}

// match reports whether rec passes the filters Query cannot say.
func (f *exportFilter) match(rec *gateway.RequestLog) bool {
	return len(f.Models) == 0 || slices.Contains(f.Models, rec.Model)
}

// parseExportFilters checks the filters object of an export body and
// returns it compacted, with what it selects in workspaceID ("" for every
// workspace). Each bad filter is a 400 naming it as filters.<name>.
//
// The filters are turned into the query parameters of GET /logs and read
// by logQuery, so that an export selects exactly the records GET /logs
// lists for the same filters.
func parseExportFilters(raw json.RawMessage, workspaceID string) (json.RawMessage, *exportFilter, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, control.Invalid("filters", "filters is required: a JSON object, {} for every record")
	}
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return nil, nil, control.Invalid("filters", "filters must be a JSON object")
	}
	v := url.Values{}
	f := &exportFilter{Limit: exportPageSizeMax}
	page := 0
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names) // the first bad filter named is always the same one
	for _, name := range names {
		val := bytes.TrimSpace(fields[name])
		param := "filters." + name
		kind, ok := exportFilterKinds[name]
		if !ok {
			return nil, nil, control.Invalid(param, "unknown filter "+control.Quote(name))
		}
		if string(val) == "null" {
			continue
		}
		s, err := filterText(param, kind, val)
		if err != nil {
			return nil, nil, err
		}
		switch name {
		case "ai_model":
			for _, m := range strings.Split(s, ",") {
				if m = strings.TrimSpace(m); m == "" || len(m) > 256 {
					return nil, nil, control.Invalid(param, param+" must be a comma-separated list of model names")
				}
				f.Models = append(f.Models, m)
			}
		case "page_size", "current_page":
			n, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
				return nil, nil, control.Invalid(param, param+" must be a number")
			}
			switch {
			case name == "page_size" && (n != math.Trunc(n) || n < 1 || n > exportPageSizeMax):
				return nil, nil, control.Invalid(param, param+" must be an integer from 1 to 50000")
			case name == "current_page" && (n != math.Trunc(n) || n < 0 || n > exportScanMax):
				return nil, nil, control.Invalid(param, param+" must be an integer ≥ 0")
			case name == "page_size":
				f.Limit = int(n)
			case name == "current_page":
				page = int(n)
			}
		default:
			v.Set(name, s)
		}
	}
	if page*f.Limit+f.Limit > exportScanMax {
		return nil, nil, control.Invalid("filters.current_page", "filters.current_page × filters.page_size must stay below 1000000")
	}
	f.Skip = page * f.Limit
	if workspaceID != "" {
		v.Set("workspace_id", workspaceID)
	}
	q, err := logQuery(v, gateway.Identity{Type: gateway.KeyOrganisation})
	if err != nil {
		var ge *gateway.Error
		if errors.As(err, &ge) && ge.Param != "" {
			c := *ge
			c.Param = "filters." + ge.Param
			c.Message = "filters." + ge.Message
			return nil, nil, &c
		}
		return nil, nil, err
	}
	f.Query = q
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, nil, control.Invalid("filters", "filters must be a JSON object")
	}
	return buf.Bytes(), f, nil
}

// filterText returns val, a filter of kind kind, as the text of the GET
// /logs parameter.
func filterText(param string, kind filterKind, val json.RawMessage) (string, error) {
	switch kind {
	case filterObject:
		if val[0] != '{' {
			return "", control.Invalid(param, param+` must be a JSON object of strings, e.g. {"team":"search"}`)
		}
		return string(val), nil
	case filterNumber, filterString:
		if val[0] == '"' {
			var s string
			if err := json.Unmarshal(val, &s); err != nil {
				return "", control.Invalid(param, param+" must be a JSON string or number")
			}
			return s, nil
		}
		if f, err := strconv.ParseFloat(string(val), 64); err == nil && !math.IsInf(f, 0) && json.Valid(val) {
			return string(val), nil
		}
		if kind == filterNumber {
			return "", control.Invalid(param, param+" must be a number")
		}
		return "", control.Invalid(param, param+" must be a string")
	}
	return "", control.Invalid(param, "unknown filter")
}

// exportField is one requested field of an export: its name and where
// logWire holds it.
type exportField struct {
	name      string
	index     int
	omitEmpty bool
}

// exportFields returns the fields of logWire that names (an export's
// requested_data) asks for, in its order: each must be a field name of
// the records GET /logs answers, given once. An empty list is a 400.
func exportFields(names []string) ([]exportField, error) {
	if len(names) == 0 {
		return nil, control.Invalid("requested_data", "requested_data must name at least one field of the records GET /logs answers")
	}
	t := reflect.TypeFor[logWire]()
	out := make([]exportField, 0, len(names))
	for i, name := range names {
		param := "requested_data[" + strconv.Itoa(i) + "]"
		if slices.ContainsFunc(out, func(f exportField) bool { return f.name == name }) {
			return nil, control.Invalid(param, "requested_data names "+control.Quote(name)+" twice")
		}
		found := false
		for j := range t.NumField() {
			tag, opts, _ := strings.Cut(t.Field(j).Tag.Get("json"), ",")
			if tag == name && tag != "object" && tag != "-" {
				out = append(out, exportField{name: name, index: j, omitEmpty: opts == "omitempty"})
				found = true
				break
			}
		}
		if !found {
			return nil, control.Invalid(param, control.Quote(name)+" is not a field of the records GET /logs answers, e.g. id, trace_id, created_at, ai_model, response_status_code, cost, metadata")
		}
	}
	return out, nil
}

// appendExportLine appends rec, with only fields, as one line of JSON
// Lines: the object GET /logs answers for rec, less the fields not asked
// for, in the order asked.
func appendExportLine(buf []byte, rec *gateway.RequestLog, fields []exportField) ([]byte, error) {
	w := reflect.ValueOf(wireLog(rec))
	buf = append(buf, '{')
	first := true
	for _, f := range fields {
		fv := w.Field(f.index)
		if f.omitEmpty && fv.IsZero() { // logWire's omitempty fields are strings, numbers, booleans and pointers
			continue
		}
		b, err := json.Marshal(fv.Interface())
		if err != nil {
			return buf, err
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = strconv.AppendQuote(buf, f.name)
		buf = append(buf, ':')
		buf = append(buf, b...)
	}
	return append(buf, '}', '\n'), nil
}
