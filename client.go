package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// This file is the gateway's in-process client: Go methods for hosts that
// call providers from their own code rather than over HTTP. Each call is
// an *http.Request served by Gateway.ServeHTTP into an in-memory
// ResponseWriter, so it takes exactly the path of an HTTP request:
// authentication, header checks, rate-limits policies, provider selection,
// retries, cache and the request log. There is no network hop between the
// caller and the gateway.

// CallOption configures one call of the in-process client. Caller,
// CallHeader and ResponseHeader return CallOptions.
type CallOption interface {
	applyCall(c *call)
}

// call is one in-process request being prepared.
type call struct {
	req    *http.Request
	header *http.Header // where ResponseHeader wants the response headers
}

// Caller says who calls and which provider serves the call, as the
// x-gateway-* headers of an HTTP request would: the gateway API key (always
// needed), then one provider-selection method — VirtualKey; Provider and
// Token; Config; or CustomHost, Provider and Token. Empty fields are not
// sent. Metadata is sent as x-gateway-metadata (and must satisfy its
// bounds), TraceID as x-gateway-trace-id.
//
// Caller holds secrets (APIKey, Token); the gateway never logs them.
type Caller struct {
	APIKey     string
	VirtualKey string
	Provider   string
	Token      string // the provider token, sent as Authorization: Bearer
	Config     string // a saved config id or an inline JSON config
	CustomHost string
	Metadata   map[string]string
	TraceID    string
}

func (c Caller) applyCall(cl *call) {
	h := cl.req.Header
	set := func(name, v string) {
		if v != "" {
			h.Set(name, v)
		}
	}
	set(HeaderAPIKey, c.APIKey)
	set(HeaderVirtualKey, c.VirtualKey)
	set(HeaderProvider, c.Provider)
	set(HeaderConfig, c.Config)
	set(HeaderCustomHost, c.CustomHost)
	set(HeaderTraceID, c.TraceID)
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Metadata != nil {
		b, _ := json.Marshal(c.Metadata) // a map of strings always encodes
		h.Set(HeaderMetadata, string(b))
	}
}

type callHeader struct{ name, value string }

func (o callHeader) applyCall(c *call) { c.req.Header.Add(o.name, o.value) }

// CallHeader returns a CallOption that adds a request header to the call,
// e.g. x-gateway-request-timeout, x-gateway-cache-namespace, a cloud-host
// header, or a header named in x-gateway-forward-headers.
func CallHeader(name, value string) CallOption { return callHeader{name, value} }

type responseHeader struct{ dst *http.Header }

func (o responseHeader) applyCall(c *call) { c.header = o.dst }

// ResponseHeader returns a CallOption that stores the response's headers
// in *dst once the response starts: x-gateway-trace-id, x-gateway-provider,
// x-gateway-cache-status and the provider's own headers. *dst is written
// from the calling goroutine before the call returns (or, for a stream,
// before the first event is yielded).
func ResponseHeader(dst *http.Header) CallOption { return responseHeader{dst} }

// ErrInvalidResponse is wrapped by the in-process client's errors when a
// provider's successful answer does not decode as the resource, fails its
// Validate (for example a fine-tuning job with an unknown status), or is
// longer than Options.MaxBodyBytes (for a stream: one event longer than
// that), which bounds the memory a call holds.
var ErrInvalidResponse = errors.New("gateway: invalid provider response")

type invalidResponse struct{ err error }

func (e *invalidResponse) Error() string {
	return ErrInvalidResponse.Error() + ": " + strings.TrimPrefix(e.err.Error(), "gateway: ")
}

func (e *invalidResponse) Is(target error) bool { return target == ErrInvalidResponse }

func (e *invalidResponse) Unwrap() error { return e.err }

// errAborted is the cause of a response cut off by the gateway, as a
// mid-stream provider failure does over HTTP.
var errAborted = fmt.Errorf("gateway: the response was cut off: %w", io.ErrUnexpectedEOF)

// CreateCompletion creates a completion through the gateway, as POST
// /completions does. The request is validated by the gateway (a violation
// is a 400 *Error naming the field), then sent to the provider the Caller
// selects. An error answer is an *Error carrying the status and the
// OpenAI error fields, whether the gateway or the provider produced it. A
// streaming request (Stream true) is refused: use StreamCompletion.
func (g *Gateway) CreateCompletion(ctx context.Context, req *CompletionRequest, opts ...CallOption) (*Completion, error) {
	if req.Streaming() {
		return nil, errors.New("gateway: CreateCompletion cannot stream; use StreamCompletion")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var c Completion
	if err := g.do(ctx, http.MethodPost, "/completions", nil, body, &c, opts); err != nil {
		return nil, err
	}
	return &c, nil
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// decodeCompletion reads one Completion of at most limit bytes from r.
func decodeCompletion(r io.Reader, limit int64) (*Completion, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &invalidResponse{errTooLarge(limit)}
	}
	var c Completion
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, &invalidResponse{err}
	}
	if err := c.Validate(); err != nil {
		return nil, &invalidResponse{err}
	}
	return &c, nil
}

// noResponse is the error of a call that ended without writing a
// response: the caller's context ended, or the handler failed.
func noResponse(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("gateway: the call ended without a response")
}

// FineTuningJob retrieves a fine-tuning job through the gateway, as GET
// /fine_tuning/jobs/{id} does. The job is checked with
// FineTuningJob.Validate; a job breaking its rules (an unknown status, a
// running job with finished_at, …) is an error wrapping
// ErrInvalidResponse. An error answer is an *Error.
func (g *Gateway) FineTuningJob(ctx context.Context, id string, opts ...CallOption) (*FineTuningJob, error) {
	if id == "" || id == "." || id == ".." {
		return nil, errors.New("gateway: FineTuningJob needs a job id")
	}
	var j FineTuningJob
	if err := g.do(ctx, http.MethodGet, "/fine_tuning/jobs/"+url.PathEscape(id), nil, nil, &j, opts); err != nil {
		return nil, err
	}
	return &j, nil
}

// ListFineTuningJobs lists one page of fine-tuning jobs through the
// gateway, as GET /fine_tuning/jobs?after=&limit= does: the jobs after the
// job id after ("" starts at the beginning), at most limit of them (0
// leaves the provider's default; a negative limit is refused by the gateway
// with a 400). Every job is checked with FineTuningJob.Validate.
func (g *Gateway) ListFineTuningJobs(ctx context.Context, after string, limit int, opts ...CallOption) (*FineTuningJobList, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var l FineTuningJobList
	if err := g.do(ctx, http.MethodGet, "/fine_tuning/jobs", q, nil, &l, opts); err != nil {
		return nil, err
	}
	return &l, nil
}

// FineTuningJobs yields every fine-tuning job, fetching pages of pageSize
// jobs (0: the provider's default) with ListFineTuningJobs and following
// has_more with the last job's id as the cursor. An error is yielded once,
// as the last value; a page that does not move the cursor is an error
// wrapping ErrInvalidResponse, so a faulty provider cannot make the
// iteration loop.
func (g *Gateway) FineTuningJobs(ctx context.Context, pageSize int, opts ...CallOption) iter.Seq2[*FineTuningJob, error] {
	return func(yield func(*FineTuningJob, error) bool) {
		after := ""
		for {
			page, err := g.ListFineTuningJobs(ctx, after, pageSize, opts...)
			if err == nil && after != "" && len(page.Data) > 0 && page.Data[len(page.Data)-1].ID == after {
				err = &invalidResponse{fmt.Errorf("gateway: the page after job %q ends with that job", after)}
			}
			if err != nil {
				yield(nil, err)
				return
			}
			for i := range page.Data {
				if !yield(&page.Data[i], nil) {
					return
				}
			}
			if !page.HasMore || len(page.Data) == 0 {
				return
			}
			after = page.Data[len(page.Data)-1].ID
		}
	}
}

// ListFiles lists files through the gateway, as GET /files?purpose= does;
// an empty purpose lists all files.
func (g *Gateway) ListFiles(ctx context.Context, purpose string, opts ...CallOption) (*FileList, error) {
	q := url.Values{}
	if purpose != "" {
		q.Set("purpose", purpose)
	}
	var l FileList
	if err := g.do(ctx, http.MethodGet, "/files", q, nil, &l, opts); err != nil {
		return nil, err
	}
	return &l, nil
}

// newCall builds the in-process request for a provider path, given
// escaped.
func (g *Gateway) newCall(ctx context.Context, method, escapedPath string, q url.Values, body []byte, accept string, opts []CallOption) *call {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	// The call is a request of its own: it never takes the gateway state of
	// a request whose context the host passed in (see Gateway.ServeHTTP).
	ctx = context.WithValue(ctx, stateKey{}, (*requestState)(nil))
	req, err := http.NewRequestWithContext(ctx, method, "http://gateway.in-process"+g.prefix+escapedPath, rd)
	if err != nil {
		panic("gateway: building an in-process request: " + err.Error()) // method and path are this file's
	}
	req.URL.RawQuery = q.Encode()
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	c := &call{req: req}
	for _, o := range opts {
		if o != nil {
			o.applyCall(c)
		}
	}
	return c
}

// do makes a call whose answer is one JSON object, decoded into v and
// checked with its Validate.
func (g *Gateway) do(ctx context.Context, method, path string, q url.Values, body []byte, v interface{ Validate() error }, opts []CallOption) error {
	cl := g.newCall(ctx, method, path, q, body, "application/json", opts)
	w := &bufferResponse{header: make(http.Header), limit: g.opts.MaxBodyBytes}
	err := g.serveCall(w, cl.req)
	if w.status == 0 {
		return noResponse(ctx, err)
	}
	if err != nil {
		return err
	}
	if cl.header != nil {
		*cl.header = w.sent
	}
	if w.status < 200 || w.status > 299 {
		return responseError(w.status, w.sent, w.body.Bytes())
	}
	if w.tooLarge {
		return &invalidResponse{errTooLarge(w.limit)}
	}
	if err := json.Unmarshal(w.body.Bytes(), v); err != nil {
		return &invalidResponse{err}
	}
	if err := v.Validate(); err != nil {
		return &invalidResponse{err}
	}
	return nil
}

// serveCall serves r in-process. A handler aborting the response (a
// provider failing mid-stream) becomes an error, as does any other panic,
// which is logged with its stack as net/http would.
func (g *Gateway) serveCall(w http.ResponseWriter, r *http.Request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				err = errAborted
				return
			}
			g.errLog.Error("gateway: panic serving an in-process call", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("gateway: panic serving an in-process call: %v", p)
		}
	}()
	g.ServeHTTP(w, r)
	return nil
}

// responseError turns an error answer into an *Error: the OpenAI error
// fields of the body when it has them, else a gateway_error naming the
// status. Retry-After is kept in RetryAfter.
func responseError(status int, h http.Header, body []byte) error {
	var eb struct {
		Error *struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Param   *string         `json:"param"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &eb) == nil && eb.Error != nil {
		f := errorFields{Message: eb.Error.Message, Type: eb.Error.Type, Param: eb.Error.Param}
		var code string
		if json.Unmarshal(eb.Error.Code, &code) != nil && len(eb.Error.Code) > 0 && string(eb.Error.Code) != "null" {
			code = string(eb.Error.Code) // some providers send numeric codes
		}
		f.Code = &code
		return errorFromBody(status, h, f)
	}
	msg := strings.TrimSpace(http.StatusText(status))
	return &Error{Status: status, Type: TypeGateway, Message: fmt.Sprintf("the provider answered %d %s", status, msg), RetryAfter: retryAfter(h)}
}

func errorFromBody(status int, h http.Header, f errorFields) *Error {
	e := &Error{Status: status, Type: f.Type, Message: f.Message, RetryAfter: retryAfter(h)}
	if f.Param != nil {
		e.Param = *f.Param
	}
	if f.Code != nil {
		e.Code = *f.Code
	}
	return e
}

func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if s, err := strconv.ParseInt(h.Get("Retry-After"), 10, 64); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
