package gateway

import (
	"net/http"
	"net/url"
	"strconv"
)

// serveFineTuningJob serves GET /fine_tuning/jobs/{fine_tuning_job_id},
// forwarded to the selected provider; its answer comes back unchanged.
func (g *Gateway) serveFineTuningJob(w http.ResponseWriter, r *http.Request) {
	g.forward(w, r, nil)
}

// serveFineTuningJobs serves GET /fine_tuning/jobs?after=&limit=: limit,
// when given, must be an integer of at least 1, and neither parameter may
// be repeated; else 400 naming the parameter. The request is then
// forwarded unchanged.
func (g *Gateway) serveFineTuningJobs(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r)
	if err == nil {
		err = single(q, "after")
	}
	if err == nil {
		err = single(q, "limit")
	}
	if err == nil {
		if v, ok := q["limit"]; ok {
			err = validateLimit(v[0])
		}
	}
	if err != nil {
		WriteError(w, r, err)
		return
	}
	g.forward(w, r, nil)
}

// serveFiles serves GET /files?purpose=: purpose may not be repeated; the
// request is forwarded unchanged.
func (g *Gateway) serveFiles(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r)
	if err == nil {
		err = single(q, "purpose")
	}
	if err != nil {
		WriteError(w, r, err)
		return
	}
	g.forward(w, r, nil)
}

func parseQuery(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidValue,
			Message: "the query string is malformed", Err: err}
	}
	return q, nil
}

// single rejects a query parameter given more than once, whose meaning a
// provider would pick at random.
func single(q url.Values, name string) error {
	if len(q[name]) > 1 {
		return invalidValue(name, "query parameter "+name+" is given more than once")
	}
	return nil
}

func validateLimit(v string) error {
	if v == "" {
		return invalidValue("limit", "limit must be an integer of at least 1, got an empty value")
	}
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return invalidValue("limit", "limit must be an integer of at least 1, got "+strconv.Quote(v))
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return invalidValue("limit", "limit is too large")
	}
	if n < 1 {
		return invalidValue("limit", "limit must be an integer of at least 1, got "+v)
	}
	return nil
}
