package prompt

import (
	"context"
	"encoding/json"
)

// Builder returns what render does once the body is read: the chat
// completions body prompt addr of workspace ws renders to with vars and
// overrides, over a renderer of s that keeps its parsed templates.
func Builder(s Store) func(ctx context.Context, ws, addr string, vars map[string]any, overrides map[string]json.RawMessage) ([]byte, error) {
	p := &plane{o: Options{Store: s}, rn: newRenderer(s)}
	return func(ctx context.Context, ws, addr string, vars map[string]any, overrides map[string]json.RawMessage) ([]byte, error) {
		_, _, body, err := p.build(ctx, ws, addr, &runRequest{vars: vars, overrides: overrides})
		return body, err
	}
}
