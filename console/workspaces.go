package console

import (
	"net/http"
	"time"
)

// defaultGuardrails are the guardrails a key or a workspace attaches to
// every request it makes or holds, by id, as the API answers them in
// defaults.
type defaultGuardrails struct {
	InputGuardrails  []string `json:"input_guardrails"`
	OutputGuardrails []string `json:"output_guardrails"`
}

// workspace is a workspace as GET /admin/workspaces answers it.
type workspace struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description *string   `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	Defaults    struct {
		Metadata map[string]string `json:"metadata"`
		defaultGuardrails
	} `json:"defaults"`
}

// workspaces lists the workspaces (organisation keys only, as in the
// API) with their default metadata and guardrails.
func (c *console) workspaces(w http.ResponseWriter, r *http.Request, s *session) {
	showList[workspace](c, w, r, s, listSource{"/admin/workspaces", paged}, "workspaces", "workspaces", "Workspaces")
}
