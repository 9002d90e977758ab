package prompt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/jsonscan"
	"github.com/modelgateway/gateway/internal/mustache"
)

// renderOptions are how a prompt renders: its template is JSON text with
// tags inside its strings, so values are escaped as string content, and a
// missing variable or partial is an error the caller is told of.
var renderOptions = mustache.Options{Escape: mustache.EscapeJSON, Strict: true}

// parsedCacheSize bounds the parsed templates a renderer keeps.
const parsedCacheSize = 1024

// renderer renders versions of the prompts of one Store. Parsing costs
// more than rendering, so it keeps the parsed template of each version
// it rendered, with the versions of the partials it was parsed with; a
// partial whose default version (or label) moved since is parsed again.
// It is safe for concurrent use.
type renderer struct {
	store  Store
	parsed *lru.Cache[string, *parsed] // by version ID
}

func newRenderer(s Store) *renderer {
	c, _ := lru.New[string, *parsed](parsedCacheSize) // only a size < 1 fails
	return &renderer{store: s, parsed: c}
}

// parsed is a version's template, parsed with the partials refs name.
type parsed struct {
	tmpl *mustache.Template
	refs []partialRef
}

// partialRef is the version of a partial that a template was parsed
// with: its record and version number; none when it was not found.
type partialRef struct {
	name     string
	recordID string
	number   int
}

// ref returns what the partial name is now, in workspace ws.
func (rn *renderer) ref(ctx context.Context, ws, name string) (partialRef, *Version, error) {
	rec, v, err := resolve(ctx, rn.store, KindPartial, ws, name, "string")
	var ge *gateway.Error
	if errors.As(err, &ge) && ge.Status == 404 {
		return partialRef{name: name}, nil, nil
	}
	if err != nil {
		return partialRef{}, nil, err
	}
	return partialRef{name, rec.ID, v.Number}, v, nil
}

// template returns v's template parsed with the partials of workspace ws
// as they are now.
func (rn *renderer) template(ctx context.Context, ws string, v *Version) (*mustache.Template, error) {
	if p, ok := rn.parsed.Get(v.ID); ok && rn.fresh(ctx, ws, p) {
		return p.tmpl, nil
	}
	var (
		refs []partialRef
		serr error
	)
	t, err := mustache.Parse(v.Template, func(name string) (string, bool) {
		ref, pv, err := rn.ref(ctx, ws, name)
		if err != nil {
			serr = err
			return "", false
		}
		refs = append(refs, ref)
		if pv == nil {
			return "", false
		}
		return pv.Template, true
	})
	if serr != nil {
		return nil, serr
	}
	if err != nil {
		var pe *mustache.ParseError
		if errors.As(err, &pe) && pe.Partial != "" {
			return nil, control.Invalid("string", "partial "+control.Quote(pe.Partial)+" is not a well-formed template: "+err.Error())
		}
		return nil, control.Invalid("string", "the template is not well formed: "+err.Error())
	}
	rn.parsed.Add(v.ID, &parsed{tmpl: t, refs: refs})
	return t, nil
}

// fresh reports whether every partial p was parsed with is still the
// version its name resolves to.
func (rn *renderer) fresh(ctx context.Context, ws string, p *parsed) bool {
	for _, want := range p.refs {
		got, _, err := rn.ref(ctx, ws, want.name)
		if err != nil || got != want {
			return false
		}
	}
	return true
}

// render renders version v of a prompt of workspace ws with vars (as
// encoding/json decodes an object) into the JSON its template stands
// for: a missing variable is a 400 naming it, and so is a result that is
// not JSON (a {{{name}}} tag that placed a value unescaped).
func (rn *renderer) render(ctx context.Context, ws string, v *Version, vars map[string]any) ([]byte, error) {
	t, err := rn.template(ctx, ws, v)
	if err != nil {
		return nil, err
	}
	out, err := t.Render(vars, renderOptions)
	if err != nil {
		var me *mustache.MissingError
		switch {
		case errors.As(err, &me) && me.Partial:
			return nil, control.Invalid("string", "the template includes partial "+control.Quote(me.Name)+", which this workspace does not hold")
		case errors.As(err, &me):
			return nil, control.Invalid("variables."+me.Name, "the template needs variable "+control.Quote(me.Name)+", which variables does not hold")
		case errors.Is(err, mustache.ErrLimit):
			return nil, control.Invalid("variables", "the template could not be rendered: "+err.Error())
		}
		return nil, err
	}
	b := []byte(out)
	if !jsonscan.Valid(b) {
		return nil, control.Invalid("variables", "the rendered template is not valid JSON: a {{{name}}} or {{&name}} tag placed a value unescaped")
	}
	return b, nil
}

// member is one member of a JSON object being built.
type member struct {
	name  string
	value json.RawMessage
}

// object is a JSON object built in order: a member set again keeps its
// first place and takes the later value.
type object []member

func (o *object) set(name string, v json.RawMessage) {
	for i := range *o {
		if (*o)[i].name == name {
			(*o)[i].value = v
			return
		}
	}
	*o = append(*o, member{name, v})
}

// merge sets every member of the JSON object raw.
func (o *object) merge(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		o.set(k, m[k])
	}
	return nil
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.name)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// chatBody returns the chat completions body of version v whose template
// rendered as rendered: its model, the rendered messages (a JSON array;
// an object's members are taken as body fields), its parameters, tools,
// tool_choice and functions, then every member of overrides, the
// caller's, which win.
func chatBody(v *Version, rendered []byte, overrides map[string]json.RawMessage) (object, error) {
	body := make(object, 0, 8+len(overrides))
	if v.Model != "" {
		m, _ := json.Marshal(v.Model)
		body.set("model", m)
	}
	switch firstByte(rendered) {
	case '[':
		body.set("messages", rendered)
	case '{':
		if err := body.merge(rendered); err != nil {
			return nil, err
		}
	default:
		return nil, control.Invalid("string", "the template must render a JSON array of messages or a JSON object of body fields")
	}
	if len(v.Parameters) > 0 {
		if err := body.merge(v.Parameters); err != nil {
			return nil, err
		}
	}
	for _, f := range []member{{"tools", v.Tools}, {"tool_choice", v.ToolChoice}, {"functions", v.Functions}} {
		if len(f.value) > 0 {
			body.set(f.name, f.value)
		}
	}
	for _, k := range sortedKeys(overrides) {
		body.set(k, overrides[k])
	}
	return body, nil
}

// firstByte returns the first byte of JSON text b other than white space.
func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
