package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// hookDefaults returns the guardrails the defaults of the caller's
// workspace and key attach to each of its data-plane requests, the
// workspace's first. A workspace Options.Workspaces does not find has
// none.
func (g *Gateway) hookDefaults(ctx context.Context, st *requestState) (in, out []HookRef, err error) {
	if ws := st.identity.WorkspaceID; ws != "" && g.opts.Workspaces != nil {
		d, err := g.workspaceHooks(ctx, ws)
		if err != nil {
			return nil, nil, err
		}
		in = defaultRefs(in, d.in, "workspace defaults.input_guardrails")
		out = defaultRefs(out, d.out, "workspace defaults.output_guardrails")
	}
	if k := st.key; k != nil {
		in = defaultRefs(in, k.InputGuardrails, "api key defaults.input_guardrails")
		out = defaultRefs(out, k.OutputGuardrails, "api key defaults.output_guardrails")
	}
	return in, out, nil
}

// wsHooks is a workspace's default guardrail ids, as read at fetched.
type wsHooks struct {
	in, out []string
	fetched time.Time
}

// wsHooksTTL is how long a workspace's default guardrails are used
// before they are read again.
const wsHooksTTL = time.Second

// workspaceHooks returns the default guardrails of workspace ws, reading
// its record at most once per wsHooksTTL: the store may query a database
// for it. A workspace that is not registered has none.
func (g *Gateway) workspaceHooks(ctx context.Context, ws string) (wsHooks, error) {
	now := time.Now()
	if d, ok := g.wsGuardrails.Get(ws); ok && now.Sub(d.fetched) < wsHooksTTL {
		return d, nil
	}
	rec, err := g.opts.Workspaces.Workspace(ctx, ws)
	d := wsHooks{fetched: now}
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return d, err
	case rec != nil:
		d.in, d.out = rec.InputGuardrails, rec.OutputGuardrails
	}
	g.wsGuardrails.Add(ws, d)
	return d, nil
}

// defaultRefs appends to refs the guardrail ids of a key's or
// workspace's defaults, at path.
func defaultRefs(refs []HookRef, ids []string, path string) []HookRef {
	for i, id := range ids {
		b, _ := json.Marshal(id)
		refs = append(refs, HookRef{Guardrail: b, Param: HeaderAPIKey, Path: path + "[" + strconv.Itoa(i) + "]"})
	}
	return refs
}

// concatRefs returns a then b, sharing no memory with a: b is a plan's,
// which other requests share.
func concatRefs(a, b []HookRef) []HookRef {
	if len(a) == 0 {
		return b
	}
	return append(a[:len(a):len(a)], b...)
}
