package guardrail

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelgateway/gateway/internal/httpapi"
)

// Phase says which side of the provider call a check looks at. Its values
// are the event types a webhook receives.
type Phase string

// The two phases.
const (
	BeforeRequest Phase = "beforeRequestHook" // the caller's request, before the provider is called
	AfterRequest  Phase = "afterRequestHook"  // the provider's answer
)

// Input is what a check looks at. The engine hands every check of a
// phase the same Input and checks must not modify it.
type Input struct {
	// Phase is the side of the call being checked.
	Phase Phase

	// Parts are the texts the checks read: on input, the text parts of
	// the last user message (RequestTexts); on output, the text of every
	// choice (ResponseTexts). A check that rewrites the text returns the
	// rewritten parts in Verdict.Parts, one for each of these.
	Parts []string

	// Text is Parts joined by newlines. The engine sets it from Parts
	// before running the checks.
	Text string

	// Model is the model the request names; "" when it names none.
	Model string

	// RequestType is the kind of request, named as RequestType names it
	// ("chatComplete", "embed", …); "" when unknown.
	RequestType string

	// Metadata is the request's metadata (x-gateway-metadata).
	Metadata map[string]string

	// Header holds the request's headers. The jwt check reads its token
	// here; no check sends them anywhere.
	Header http.Header

	// Request is the request's JSON body, and Response the answer's
	// (nil before the provider is called). The webhook check sends them.
	Request  json.RawMessage
	Response json.RawMessage
}

// Verdict is the outcome of one check.
type Verdict struct {
	// Pass reports whether the check passed.
	Pass bool

	// Explanation says why, in a sentence fit for the caller: it never
	// holds the secret or personal data the check looked for.
	Explanation string

	// Parts, when not nil, is the text rewritten by the check (redacted
	// personal data, say), one element for each of Input.Parts. Only a
	// check whose Rewrites method reports true may set it.
	Parts []string
}

// Check is one check of a guardrail, built by a Factory from its
// parameters. Check must be safe for concurrent use: the engine calls it
// from several requests at once. It must return when ctx is done; an
// error means the check could not decide (the guardrail's on_error says
// what follows), and is never shown to the caller verbatim unless it is
// an *Error.
type Check interface {
	Check(ctx context.Context, in *Input) (Verdict, error)
}

// Rewriter is a Check that may rewrite the text it reads. The engine runs
// the checks whose Rewrites method reports true one after another, in
// order, each on the text the previous one left; every other check runs
// concurrently on the original text.
type Rewriter interface {
	Check
	Rewrites() bool
}

// Timeouter is a Check that sets its own time limit instead of the
// engine's DefaultTimeout.
type Timeouter interface {
	Check
	Timeout() time.Duration
}

// Factory builds a check from its JSON parameters (nil or empty when the
// definition gives none). A bad parameter is an *Error naming it, best
// made with DecodeParameters.
type Factory func(params json.RawMessage) (Check, error)

// Error codes of an *Error.
const (
	// CodeUnsupportedCheck: the check id is not registered.
	CodeUnsupportedCheck = "unsupported_check"
	// CodeInvalidParameter: a check's parameter is missing, unknown, of
	// the wrong type or out of its bounds.
	CodeInvalidParameter = "invalid_parameter"
)

// Error is a guardrail or check definition the registry refuses. The
// gateway answers it with a 400 carrying Code and naming Param.
type Error struct {
	Code    string // CodeUnsupportedCheck or CodeInvalidParameter
	Param   string // e.g. "checks[1].parameters.rule"
	Message string
}

// Error returns the message, prefixed by the parameter it names.
func (e *Error) Error() string {
	if e.Param == "" {
		return "guardrail: " + e.Message
	}
	return "guardrail: " + e.Param + ": " + e.Message
}

// within returns a copy of e whose Param is prefixed by path.
func (e *Error) within(path string) *Error {
	c := *e
	if c.Param == "" {
		c.Param = path
	} else {
		c.Param = path + "." + c.Param
	}
	return &c
}

// paramError returns an *Error for the named parameter.
func paramError(name, msg string) *Error {
	return &Error{Code: CodeInvalidParameter, Param: "parameters." + name, Message: name + " " + msg}
}

// DecodeParameters decodes a check's JSON parameters into v, a pointer to
// a struct, refusing members v does not name. Empty params leave v as it
// is. A bad member is an *Error whose Param is "parameters.<member>".
func DecodeParameters(params json.RawMessage, v any) error {
	if len(params) == 0 || strings.TrimSpace(string(params)) == "null" {
		return nil
	}
	// encoding/json matches member names regardless of case; parameters
	// are matched exactly, so "onlyDns" is refused rather than taken.
	if names := jsonNames(v); names != nil {
		var members map[string]json.RawMessage
		if json.Unmarshal(params, &members) == nil {
			for k := range members {
				if !names[k] {
					return &Error{Code: CodeInvalidParameter, Param: "parameters." + k, Message: "unknown parameter " + quote(k)}
				}
			}
		}
	}
	err := httpapi.DecodeStrict(params, v)
	if err == nil {
		return nil
	}
	var fe *httpapi.FieldError
	if errors.As(err, &fe) && fe.Param != "" {
		return &Error{Code: CodeInvalidParameter, Param: "parameters." + fe.Param, Message: fe.Message}
	}
	return &Error{Code: CodeInvalidParameter, Param: "parameters", Message: "parameters must be a JSON object"}
}

// jsonNames returns the member names of the struct v points to, or nil.
func jsonNames(v any) map[string]bool {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	names := map[string]bool{}
	for i := range t.Elem().NumField() {
		f := t.Elem().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	return names
}

// Registry maps check ids to the factories that build them. The zero
// Registry is empty and ready to use; NewRegistry returns one holding the
// built-in checks. A Registry is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex // guards factories
	factories map[string]Factory
}

// Register makes id build checks with f, replacing what id built before.
// It panics when id is empty or f is nil, a programming error.
func (r *Registry) Register(id string, f Factory) {
	if id == "" || f == nil {
		panic("guardrail: Register needs an id and a factory")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.factories == nil {
		r.factories = make(map[string]Factory)
	}
	r.factories[id] = f
}

// IDs returns the registered check ids, sorted.
func (r *Registry) IDs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := make([]string, 0, len(r.factories))
	for id := range r.factories {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// New builds the check id with params. An id that is not registered is an
// *Error with CodeUnsupportedCheck and Param "id"; a bad parameter is the
// factory's *Error.
func (r *Registry) New(id string, params json.RawMessage) (Check, error) {
	r.mu.RLock()
	f := r.factories[id]
	r.mu.RUnlock()
	if f == nil {
		return nil, &Error{Code: CodeUnsupportedCheck, Param: "id", Message: "check " + quote(id) + " is not supported"}
	}
	c, err := f(params)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, &Error{Code: CodeInvalidParameter, Param: "id", Message: "check " + quote(id) + " built no check"}
	}
	return c, nil
}

// quote quotes s for a message, cut to 64 bytes.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}
