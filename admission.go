package gateway

import (
	"context"
	"mime"
	"net/http"
)

// Admission is a stage a product adds to the data plane (Options.Admissions):
// it decides whether an authenticated request may go on, before the
// request is rate-limited and routed, and learns how the request ended.
// The budget package's Stage is one: it refuses a request whose budget
// is spent and charges the tokens or cost its record reports. An
// Admission that needs the request's body or API key reads them with
// RequestBody and APIKeyFrom.
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
	for _, a := range g.admissions {
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

// APIKeyFrom returns the stored record of the API key the Authenticate
// stage identified the caller of ctx by: what an Admission needs beyond
// the Identity (its usage_limits, say). The record is shared and must not
// be changed. It reports false for a request without a key record.
func APIKeyFrom(ctx context.Context) (*APIKey, bool) {
	st := stateFrom(ctx)
	if st == nil || st.key == nil {
		return nil, false
	}
	return st.key, true
}

// RequestBody returns the body of the data-plane request r for an
// Admission, whose Admit must not read r.Body itself: the body its
// endpoint already read, else a streamed JSON body (Content-Type
// application/json) of a declared length of at most limit bytes, read
// once here and handed on to the stages after. It returns nil for any
// other body (an upload, one of unknown or greater length). The slice is
// shared and must not be changed. An error is the request's own, answered
// as it is: a body over Options.MaxBodyBytes (413), or one the caller did
// not finish sending.
func RequestBody(r *http.Request, limit int64) ([]byte, error) {
	st := stateFrom(r.Context())
	if st == nil || st.gw == nil {
		return nil, nil
	}
	if st.body.read != nil {
		return st.body.read, nil
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength < 0 || r.ContentLength > limit {
		return nil, nil
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return nil, nil
	}
	body, err := readBody(&st.rw, r, st.gw.opts.MaxBodyBytes)
	if err != nil {
		return nil, errorFor(err)
	}
	st.body.read = body
	return body, nil
}

// AnswerFrom reports how the answer to the data-plane request of ctx was
// come by, for an Admission's settle (called with the context Admit was
// given), beyond what its RequestLog says: reached, some of the request
// was handed to a provider (by an attempt, or by a cache fill serving
// it); own, the answer is the request's own, neither a cache hit nor
// another caller's identical request's, shared from its cache fill (that
// caller's record carries what the provider charged); usage, the answer
// reported its token usage, which the record's token fields hold (zeros
// included). Budgets charge by them.
func AnswerFrom(ctx context.Context) (reached, own, usage bool) {
	st := stateFrom(ctx)
	if st == nil {
		return false, false, false
	}
	_, _, _, _, usage = st.usage.counts()
	return st.result.upstream, !st.result.cacheHit && !st.shared, usage
}
