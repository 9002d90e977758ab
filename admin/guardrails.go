package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// Guardrails tells the routes that write guardrail ids (the
// defaults.input_guardrails and defaults.output_guardrails of keys and
// workspaces, a config's input_guardrails and output_guardrails) which
// guardrails a workspace may attach. *guardrail.Hooks is one.
// HasGuardrail reports whether workspace ws (empty: the organisation) may
// attach the guardrail whose id or slug is id: its own or the
// organisation's; another workspace's is reported as not there. It must
// be safe for concurrent use.
type Guardrails interface {
	HasGuardrail(ctx context.Context, ws, id string) (bool, error)
}

// maxDefaultGuardrails bounds the guardrail ids of a defaults list, as a
// config node's.
const maxDefaultGuardrails = 16

// checkGuardrailIDs checks ids, the guardrail ids of the defaults field
// of a key or workspace of workspace ws: at most 16, each one ws may
// attach. An unknown id and another workspace's get the same 400.
func (a *plane) checkGuardrailIDs(ctx context.Context, field, ws string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if a.o.Guardrails == nil {
		return control.Invalid(field, field+": this gateway checks no guardrails")
	}
	if err := guardrailIDsError(field, ids); err != nil {
		return err
	}
	for i, id := range ids {
		p := field + "[" + strconv.Itoa(i) + "]"
		ok, err := a.o.Guardrails.HasGuardrail(ctx, ws, id)
		if err != nil {
			return err
		}
		if !ok {
			return control.Invalid(p, p+": no guardrail "+control.Quote(id))
		}
	}
	return nil
}

// guardrailIDsError checks the length of ids, a defaults list of
// guardrail ids in field, before each id is looked up: at most 16.
func guardrailIDsError(field string, ids []string) error {
	if len(ids) > maxDefaultGuardrails {
		return control.Invalid(field, field+" must hold at most "+strconv.Itoa(maxDefaultGuardrails)+" guardrail ids")
	}
	return nil
}

// checkConfigGuardrails checks the guardrail ids c attaches, at path,
// when the config is saved for workspace ws: each one ws may attach,
// else 400 invalid_config naming the path, the same for an unknown id
// and another workspace's. Inline guardrails are checked where they
// run. Without Options.Guardrails nothing is checked here.
func (a *plane) checkConfigGuardrails(ctx context.Context, ws string, c *gateway.Config, path string) error {
	if a.o.Guardrails == nil {
		return nil
	}
	for _, l := range []struct {
		name string
		refs []json.RawMessage
	}{{"input_guardrails", c.InputGuardrails}, {"output_guardrails", c.OutputGuardrails}} {
		for i, ref := range l.refs {
			var id string
			if json.Unmarshal(ref, &id) != nil {
				continue // an inline guardrail
			}
			ok, err := a.o.Guardrails.HasGuardrail(ctx, ws, id)
			if err != nil {
				return err
			}
			if !ok {
				return &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: gateway.CodeInvalidConfig,
					Param: "config", Message: fmt.Sprintf("%s[%d]: unknown guardrail %s", join(path, l.name), i, control.Quote(id))}
			}
		}
	}
	for i, t := range c.Targets {
		if err := a.checkConfigGuardrails(ctx, ws, t, fmt.Sprintf("%s[%d]", join(path, "targets"), i)); err != nil {
			return err
		}
	}
	return nil
}

// setGuardrailIDs checks the guardrail ids of a defaults object written
// for a key or workspace of workspace ws (nil: not given) and writes
// those given into in and out: a list replaces the one stored, an empty
// list removes it.
func (a *plane) setGuardrailIDs(ctx context.Context, ws string, input, output []string, in, out *[]string) error {
	for _, l := range []struct {
		field string
		ids   []string
		to    *[]string
	}{{"defaults.input_guardrails", input, in}, {"defaults.output_guardrails", output, out}} {
		if l.ids == nil {
			continue
		}
		if err := a.checkGuardrailIDs(ctx, l.field, ws, l.ids); err != nil {
			return err
		}
		*l.to = nil
		if len(l.ids) > 0 {
			*l.to = slices.Clone(l.ids)
		}
	}
	return nil
}
