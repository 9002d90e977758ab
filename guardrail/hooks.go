package guardrail

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/jsonscan"
	"github.com/modelgateway/gateway/observe"
)

// Hooks is the guardrails product's part of the data plane: a
// gateway.Hooks that runs the guardrails a config attaches (by id, from
// Store, or inline) on each request and its answer, and the /guardrails
// routes (Mount). Set its fields, pass it as gateway.Options.Hooks, then
// Mount it on the gateway before serving; a Hooks must not be copied or
// changed after that. It is safe for concurrent use.
type Hooks struct {
	// Store holds the guardrails configs name by id. Nil makes every id
	// unknown; inline guardrails still run. The routes need an
	// AdminStore.
	Store Store

	// Registry builds the checks. Nil means NewRegistry with the
	// gateway's guarded client (gateway.GuardedClient), made by Mount;
	// register a host's own checks on it after Mount.
	Registry *Registry

	// Feedback, when not nil, records the feedback of guardrails whose
	// actions ask for it (on_success, on_fail) on the request's trace.
	Feedback observe.FeedbackStore

	// Auditor records the writes of the /guardrails routes, as resource
	// "guardrails". Nil records nothing.
	Auditor Auditor

	// ErrorLog receives the failures of feedback writes and of
	// asynchronous guardrails. Nil means slog.Default().
	ErrorLog *slog.Logger

	once      sync.Once
	compiled  *lru.Cache[[sha256.Size]byte, *attached]
	checkHost func(string) error // the gateway's, set by Mount
}

// Auditor wraps the handlers of routes that write; *observe.Auditor is
// one.
type Auditor interface {
	Wrap(resource string, h http.Handler) http.Handler
}

var _ gateway.Hooks = (*Hooks)(nil)

// maxCompiled bounds the compiled guardrails kept for the next request.
const maxCompiled = 1024

// inputRan is the State of a request's HookCall: the guardrails its
// input phase ran on the whole request, by key.
type inputRan struct{ keys map[[sha256.Size]byte]bool }

// attached is a guardrail ready to run with what its actions ask beside
// denying.
type attached struct {
	key               [sha256.Size]byte // which guardrail: its record's id and version, or its inline JSON and place
	g                 *Guardrail
	async, buffer     bool
	onSuccess, onFail *FeedbackAction
}

func (h *Hooks) init() {
	h.once.Do(func() {
		h.compiled, _ = lru.New[[sha256.Size]byte, *attached](maxCompiled)
		if h.Registry == nil {
			// Not mounted: no client the guard vouches for, so checks
			// that reach the network fail (closed) rather than call a
			// tenant's URL unguarded.
			h.Registry = NewRegistry(Env{HTTPClient: &http.Client{Transport: refuse{}}})
		}
	})
}

func (h *Hooks) log() *slog.Logger {
	if h.ErrorLog != nil {
		return h.ErrorLog
	}
	return slog.Default()
}

// Before runs the input guardrails of c on the request body, rewriting
// it when a check redacts it, and checks that its output guardrails
// exist.
func (h *Hooks) Before(r *http.Request, c *gateway.HookCall) error {
	h.init()
	ctx := r.Context()
	id, _ := gateway.IdentityFrom(ctx)
	ins, err := h.resolve(ctx, id.WorkspaceID, c.Input)
	if err != nil {
		return err
	}
	outs, err := h.resolve(ctx, id.WorkspaceID, c.Output)
	if err != nil {
		return err
	}
	for _, o := range outs {
		c.Buffer = c.Buffer || o.buffer && !o.async
	}
	// The guardrails the input phase ran on the whole request are not run
	// again on a target's: a target's Before shares the request's State.
	if ran, ok := c.State.(*inputRan); ok {
		ins = slices.DeleteFunc(ins, func(a *attached) bool { return ran.keys[a.key] })
	} else if len(ins) > 0 {
		ran := &inputRan{keys: make(map[[sha256.Size]byte]bool, len(ins))}
		for _, a := range ins {
			ran.keys[a.key] = true
		}
		c.State = ran
	}
	if len(ins) == 0 {
		return nil
	}
	texts, _ := RequestTexts(c.Body) // a body without such text has no parts
	in := h.input(r, BeforeRequest, c.Body, texts)
	in.Request = c.Body
	out, ran := h.run(ctx, id.WorkspaceID, in, ins)
	if !ran {
		return nil
	}
	c.BeforeResults = results(out)
	c.Denied, c.Failed = c.Denied || out.Denied(), c.Failed || out.Failed()
	if out.Transformed && texts != nil {
		b, err := texts.Replace(out.Parts)
		if err != nil {
			return err
		}
		c.Body = b
	}
	return nil
}

// After runs the output guardrails of c on the answer: a JSON body,
// rewritten when a check redacts it, or the events of a stream; for a
// stream whose response the gateway keeps (HookCall.Kept), that response,
// rewritten the same way.
func (h *Hooks) After(r *http.Request, c *gateway.HookCall) error {
	h.init()
	ctx := r.Context()
	id, _ := gateway.IdentityFrom(ctx)
	outs, err := h.resolve(ctx, id.WorkspaceID, c.Output)
	if err != nil || len(outs) == 0 {
		return err
	}
	var texts *Texts
	answer := c.Body
	switch {
	case c.Stream && c.Kept != nil:
		// The response the gateway keeps of the stream holds its whole
		// text: checked, and redacted, as a whole answer is.
		answer = c.Kept
		texts, _ = ResponseTexts(answer)
	case c.Stream:
		answer = streamAnswer(c.Body)
	default:
		texts, _ = ResponseTexts(c.Body)
	}
	if texts == nil {
		texts, _ = ResponseTexts(answer)
	}
	in := h.input(r, AfterRequest, answer, texts)
	in.Response = answer
	out, ran := h.run(ctx, id.WorkspaceID, in, outs)
	if !ran {
		return nil
	}
	c.AfterResults = results(out)
	c.Denied, c.Failed = c.Denied || out.Denied(), c.Failed || out.Failed()
	if out.Transformed && texts != nil && (!c.Stream || c.Kept != nil) {
		b, err := texts.Replace(out.Parts)
		if err != nil {
			return err
		}
		if c.Stream {
			c.Kept = b
		} else {
			c.Body = b
		}
	}
	return nil
}

// input returns what the checks of phase look at in the request r whose
// body (or answer) is b.
func (h *Hooks) input(r *http.Request, phase Phase, b []byte, texts *Texts) *Input {
	in := &Input{Phase: phase, Model: model(b), RequestType: requestType(r), Header: r.Header}
	if texts != nil {
		in.Parts = texts.Parts
	}
	if o, ok := gateway.RequestOptionsFrom(r.Context()); ok {
		in.Metadata = o.Metadata
	}
	return in
}

// run runs the guardrails gs on in: the asynchronous ones in the
// background, the others before it returns. ran says some did.
func (h *Hooks) run(ctx context.Context, ws string, in *Input, gs []*attached) (Outcome, bool) {
	var now, later []*Guardrail
	var nowC, laterC []*attached
	for _, c := range gs {
		if c.async {
			later, laterC = append(later, c.g), append(laterC, c)
		} else {
			now, nowC = append(now, c.g), append(nowC, c)
		}
	}
	trace, _ := gateway.TraceIDFrom(ctx)
	if len(later) > 0 {
		// Asynchronous guardrails never hold the request: they run past
		// it, each check within its time limit, and report through
		// feedback and the error log.
		actx := context.WithoutCancel(ctx)
		go func() {
			out := Run(actx, in, later...)
			if out.Failed() {
				h.log().WarnContext(actx, "gateway: an asynchronous guardrail failed", "trace_id", trace, "phase", string(in.Phase))
			}
			h.feedback(actx, ws, trace, laterC, out)
		}()
	}
	if len(now) == 0 {
		return Outcome{}, false
	}
	out := Run(ctx, in, now...)
	h.feedback(ctx, ws, trace, nowC, out)
	return out, true
}

// feedback records on trace the feedback gs's actions ask for.
func (h *Hooks) feedback(ctx context.Context, ws, trace string, gs []*attached, out Outcome) {
	if h.Feedback == nil || trace == "" {
		return
	}
	var fs []*observe.Feedback
	now := time.Now().UTC()
	for i, c := range gs {
		if i >= len(out.Results) {
			break
		}
		f := c.onSuccess
		if !out.Results[i].Verdict {
			f = c.onFail
		}
		if f == nil {
			continue
		}
		meta, _ := json.Marshal(map[string]string{"guardrail": c.g.ID(), "metadata": f.Metadata})
		fs = append(fs, &observe.Feedback{ID: control.NewUUID(), WorkspaceID: ws, TraceID: trace, Value: f.Value, Weight: f.Weight,
			Metadata: meta, CreatedAt: now, UpdatedAt: now})
	}
	if len(fs) == 0 {
		return
	}
	if err := h.Feedback.AddFeedback(context.WithoutCancel(ctx), fs); err != nil {
		h.log().ErrorContext(ctx, "gateway: guardrail feedback", "err", err)
	}
}

// results encodes the results of out as the hook results of a phase, a
// JSON array of each result as Result.MarshalJSON encodes it.
func results(out Outcome) json.RawMessage {
	b := make([]byte, 0, 256*len(out.Results))
	b = append(b, '[')
	for i := range out.Results {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendResult(b, &out.Results[i])
	}
	return append(b, ']')
}

// resolve returns the guardrails refs attach, compiled, for workspace
// ws, each once: a guardrail attached again (the same stored guardrail,
// by id or slug) keeps its first place. A guardrail a ref names but ws
// cannot see, or one that does not compile, is a 400 naming the ref.
func (h *Hooks) resolve(ctx context.Context, ws string, refs []gateway.HookRef) ([]*attached, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	gs := make([]*attached, 0, len(refs))
	for _, ref := range refs {
		g, err := h.resolveRef(ctx, ws, ref)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(gs, func(a *attached) bool { return a.key == g.key }) {
			gs = append(gs, g)
		}
	}
	return gs, nil
}

// resolveRef returns the guardrail ref attaches, compiled, for workspace
// ws.
func (h *Hooks) resolveRef(ctx context.Context, ws string, ref gateway.HookRef) (*attached, error) {
	raw := bytes.TrimSpace(ref.Guardrail)
	var key [sha256.Size]byte
	var rec *Record
	if len(raw) > 0 && raw[0] == '"' {
		var slug string
		if err := json.Unmarshal(raw, &slug); err != nil {
			return nil, refError(ref, "", "must be a guardrail id or object")
		}
		var err error
		if h.Store != nil {
			rec, err = h.Store.Guardrail(ctx, ws, slug)
		}
		// Another workspace's guardrail answers as an unknown one.
		if h.Store == nil || errors.Is(err, gateway.ErrNotFound) || err == nil && rec.WorkspaceID != "" && rec.WorkspaceID != ws {
			return nil, refError(ref, "", "unknown guardrail "+quote(slug))
		} else if err != nil {
			return nil, err
		}
		key = sha256.Sum256([]byte("record\x00" + rec.ID + "\x00" + rec.VersionID))
	} else {
		key = sha256.Sum256(append([]byte("inline\x00"+ref.Path+"\x00"), raw...))
	}
	if c, ok := h.compiled.Get(key); ok {
		return c, nil
	}
	if rec == nil {
		var b body
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			return nil, refError(ref, "", "is not a guardrail object: "+err.Error())
		}
		rec = &Record{Slug: ref.Path}
		if b.ID != nil && *b.ID != "" {
			rec.Slug = *b.ID
		}
		if e := b.settings(rec, true); e != nil {
			return nil, refError(ref, e.Param, e.Message)
		}
	}
	g, err := h.Registry.Compile(rec.Definition())
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) {
			return nil, refError(ref, ge.Param, ge.Message)
		}
		return nil, err
	}
	c := &attached{key: key, g: g, async: rec.Actions.Async, buffer: rec.StreamMode == StreamBuffer,
		onSuccess: rec.Actions.OnSuccess, onFail: rec.Actions.OnFail}
	h.compiled.Add(key, c)
	return c, nil
}

// refError is the 400 invalid_config of a guardrail ref attaches, at
// field of it.
func refError(ref gateway.HookRef, field, msg string) error {
	at := ref.Path
	if field != "" {
		at += "." + field
	}
	return &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: gateway.CodeInvalidConfig,
		Param: ref.Param, Message: at + ": " + msg}
}

// HasGuardrail reports whether workspace ws (empty: the organisation)
// may attach the guardrail whose id or slug is id: one of its own or one
// of the organisation's, as requests of ws find it. Another workspace's
// guardrail is reported as not there. admin.Options.Guardrails takes a
// Hooks, to check the ids written in configs and defaults.
func (h *Hooks) HasGuardrail(ctx context.Context, ws, id string) (bool, error) {
	if h.Store == nil {
		return false, nil
	}
	rec, err := h.Store.Guardrail(ctx, ws, id)
	switch {
	case errors.Is(err, gateway.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return rec.WorkspaceID == "" || rec.WorkspaceID == ws, nil
}

// model returns the model a JSON body names, "" when none.
func model(b []byte) string {
	var m string
	jsonscan.EachMember(b, func(name, v []byte) bool {
		if string(name) == `"model"` && len(v) > 1 && v[0] == '"' {
			json.Unmarshal(v, &m)
			return false
		}
		return true
	})
	return m
}

// requestType names the kind of r as RequestType does, whatever prefix
// the gateway serves under.
func requestType(r *http.Request) string {
	p := r.URL.Path
	for range 3 {
		if t := RequestType(r.Method, p); t != "proxy" {
			return t
		}
		i := strings.IndexByte(p[min(1, len(p)):], '/')
		if i < 0 {
			break
		}
		p = p[i+1:]
	}
	return "proxy"
}

// streamAnswer assembles the events of a chat completions or completions
// stream into the answer they make: one choice for each index, holding
// the text the deltas carried, as ResponseTexts reads it.
func streamAnswer(events []byte) []byte {
	var texts []strings.Builder
	for len(events) > 0 {
		line := events
		if i := bytes.IndexByte(events, '\n'); i >= 0 {
			line, events = events[:i], events[i+1:]
		} else {
			events = nil
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 || data[0] != '{' {
			continue
		}
		var chunk struct {
			Type    string          `json:"type"`
			Delta   json.RawMessage `json:"delta"`
			Choices []struct {
				Index int    `json:"index"`
				Text  string `json:"text"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal(data, &chunk) != nil {
			continue
		}
		// The text deltas of Anthropic Messages and OpenAI Responses
		// streams make one answer's text.
		var text string
		switch chunk.Type {
		case "content_block_delta":
			var d struct {
				Type, Text string
			}
			if json.Unmarshal(chunk.Delta, &d) == nil && d.Type == "text_delta" {
				text = d.Text
			}
		case "response.output_text.delta":
			json.Unmarshal(chunk.Delta, &text)
		}
		if text != "" {
			if len(texts) == 0 {
				texts = append(texts, strings.Builder{})
			}
			texts[0].WriteString(text)
			continue
		}
		for _, ch := range chunk.Choices {
			if ch.Index < 0 || ch.Index > 127 {
				continue
			}
			for len(texts) <= ch.Index {
				texts = append(texts, strings.Builder{})
			}
			texts[ch.Index].WriteString(ch.Delta.Content)
			texts[ch.Index].WriteString(ch.Text)
		}
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type choice struct {
		Index   int     `json:"index"`
		Message message `json:"message"`
	}
	var a struct {
		Choices []choice `json:"choices"`
	}
	a.Choices = make([]choice, len(texts))
	for i := range texts {
		a.Choices[i] = choice{Index: i, Message: message{Role: "assistant", Content: texts[i].String()}}
	}
	b, _ := json.Marshal(a)
	return b
}

// refuse is the transport of a Hooks that was not mounted.
type refuse struct{}

func (refuse) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("gateway: guardrails call no URL before Hooks.Mount gives them the gateway's guarded client")
}
