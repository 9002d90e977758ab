package gateway

import "net/http"

// Admission is a stage a product adds to the data plane (Options.Admissions):
// it decides whether an authenticated request may go on, before the
// request is rate-limited and routed, and learns how the request ended.
// Budgets are one: they refuse a request whose budget is spent and charge
// the tokens or cost its record reports.
//
// Admit is called once per request, after its endpoint accepted it, with
// the caller's Identity (IdentityFrom), RequestOptions (RequestOptionsFrom)
// and trace id in r's context. A non-nil error refuses the request: an
// *Error is answered as it is (a 412 or 429, say), any other error is a
// 500 whose cause goes to the error log. Otherwise settle, when not nil,
// is called once with the request's final record (tokens, cost, status,
// cache status as the caller saw them) after the answer was sent, even
// when the caller went away or the stream was cut; the record is shared
// and must not be kept or changed. When a later stage refuses the
// request, settle is called too, with the record of that refusal. Admit
// must not read r's body.
//
// Admissions run in the order of Options.Admissions; the first refusal
// stops the others, and those admitted before it are settled with the
// refusal's record. Implementations must be safe for concurrent use.
type Admission interface {
	Admit(r *http.Request) (settle func(rec *RequestLog), err error)
}

// admit runs Options.Admissions for r. It returns false, having answered
// the refusal, when one refused.
func (g *Gateway) admit(w http.ResponseWriter, r *http.Request, st *requestState) bool {
	for _, a := range g.opts.Admissions {
		settle, err := a.Admit(r)
		if err != nil {
			g.fail(w, r, "admission", err)
			return false
		}
		if settle != nil {
			st.settles = append(st.settles, settle)
			st.wantUsage = true
		}
	}
	return true
}
