package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
	"github.com/modelgateway/gateway/internal/uuid"
)

// feedbackMax bounds the feedback of one POST /feedback.
const feedbackMax = 100

// feedbackMetadataMax bounds one feedback's metadata, in bytes of JSON.
const feedbackMetadataMax = 16 << 10

// feedbackBody is a FeedbackRequest of the reference (trace_id is not
// read by PUT), and workspace_id for an organisation key.
type feedbackBody struct {
	TraceID     *string         `json:"trace_id"`
	Value       json.RawMessage `json:"value"`
	Weight      json.RawMessage `json:"weight"`
	Metadata    json.RawMessage `json:"metadata"`
	WorkspaceID string          `json:"workspace_id"`
}

// serveFeedback serves {prefix}/feedback and {prefix}/feedback/{id}
// (the observability routes), for a key with completions.write (an application scoring
// its own answers) or logs.write:
//
//   - POST /feedback: one FeedbackRequest or an array of 1 to 100 of them
//     → {"status":"success","message","feedback_ids"} in the order given.
//     trace_id links the feedback to the request logs of that trace in
//     the caller's workspace (an organisation key names one with
//     workspace_id, in the body or the query); the trace need not be
//     logged yet.
//   - PUT /feedback/{id}: replaces value, weight (default 1) and, when
//     given, metadata. Another workspace's feedback is 404.
//
// value is an integer from −10 to 10, weight a number from 0 to 1
// (default 1), metadata a JSON object. The routes answer 404 when
// Options.Feedback is nil.
func (rs *Routes) serveFeedback(w http.ResponseWriter, r *http.Request) {
	fbID := r.PathValue("id")
	method := http.MethodPost
	if fbID != "" {
		method = http.MethodPut
	}
	if !control.Allow(w, r, method) {
		return
	}
	id, _ := gateway.IdentityFrom(r.Context())
	if !id.Can(gateway.ScopeCompletionsWrite) && !id.Can(gateway.ScopeLogsWrite) {
		gateway.WriteError(w, r, control.MissingScope(gateway.ScopeLogsWrite))
		return
	}
	store := rs.feedback
	if store == nil {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "feedback is not kept on this gateway"})
		return
	}
	body, err := control.ReadBody(r)
	if err != nil {
		gateway.WriteError(w, r, err)
		return
	}
	named, err := httpapi.WorkspaceParam(r.URL.Query())
	err = control.Translate(err)
	if err != nil {
		gateway.WriteError(w, r, err)
		return
	}
	now := rs.clock().UTC()
	if fbID != "" {
		var b feedbackBody
		if err := decodeStrict(body, &b); err != nil {
			gateway.WriteError(w, r, err)
			return
		}
		f, err := feedbackOf(&b, "", false)
		if err != nil {
			gateway.WriteError(w, r, err)
			return
		}
		ws, err := feedbackWorkspace(id, named, b.WorkspaceID)
		if err != nil {
			gateway.WriteError(w, r, err)
			return
		}
		f.ID, f.WorkspaceID, f.UpdatedAt = fbID, ws, now
		if ws == "" && id.Type != gateway.KeyOrganisation {
			f.WorkspaceID = "\x00" // a workspace key of no workspace sees none
		}
		old, err := store.UpdateFeedback(r.Context(), f)
		if err != nil {
			control.Fail(w, r, rs.errLog, "feedback store", notFoundAs(err, "feedback "+control.Quote(fbID)+" not found"))
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, obj{"status": "success", "message": "feedback updated", "feedback_ids": []string{old.ID}})
		return
	}
	var bodies []feedbackBody
	many := false
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
		many = true
		err = decodeStrict(trimmed, &bodies)
	} else {
		bodies = make([]feedbackBody, 1)
		err = decodeStrict(trimmed, &bodies[0])
	}
	if err != nil {
		gateway.WriteError(w, r, err)
		return
	}
	if len(bodies) == 0 || len(bodies) > feedbackMax {
		gateway.WriteError(w, r, control.Invalid("", "the body must hold 1 to 100 feedback objects"))
		return
	}
	fs := make([]*Feedback, len(bodies))
	ids := make([]string, len(bodies))
	for i := range bodies {
		prefix := ""
		if many {
			prefix = "[" + strconv.Itoa(i) + "]."
		}
		f, err := feedbackOf(&bodies[i], prefix, true)
		if err != nil {
			gateway.WriteError(w, r, err)
			return
		}
		if f.WorkspaceID, err = feedbackWorkspace(id, named, bodies[i].WorkspaceID); err != nil {
			gateway.WriteError(w, r, err)
			return
		}
		f.ID, f.CreatedAt, f.UpdatedAt = uuid.New(), now, now
		fs[i], ids[i] = f, f.ID
	}
	if err := store.AddFeedback(r.Context(), fs); err != nil {
		control.Fail(w, r, rs.errLog, "feedback store", err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, obj{"status": "success", "message": "feedback saved", "feedback_ids": ids})
}

// decodeStrict decodes body into v, refusing unknown fields, as a 400
// naming the field at fault.
func decodeStrict(body []byte, v any) error {
	err := httpapi.DecodeStrict(body, v)
	if errors.Is(err, httpapi.ErrTrailing) {
		return control.Invalid("", "the body must hold one JSON value")
	}
	return control.Translate(err)
}

// feedbackOf checks b and returns its feedback, fields named with prefix;
// withTrace says trace_id is required (POST) rather than refused (PUT).
func feedbackOf(b *feedbackBody, prefix string, withTrace bool) (*Feedback, error) {
	f := &Feedback{Weight: 1}
	switch {
	case withTrace && (b.TraceID == nil || *b.TraceID == "" || len(*b.TraceID) > 256):
		return nil, control.Invalid(prefix+"trace_id", prefix+"trace_id is required: a string of 1 to 256 bytes")
	case !withTrace && b.TraceID != nil:
		return nil, control.Invalid(prefix+"trace_id", prefix+"trace_id cannot be changed")
	case withTrace:
		f.TraceID = *b.TraceID
	}
	if len(b.Value) == 0 || bytes.Equal(b.Value, []byte("null")) {
		return nil, control.Invalid(prefix+"value", prefix+"value is required: an integer from -10 to 10")
	}
	v, err := strconv.ParseInt(string(b.Value), 10, 64)
	if err != nil || v < -10 || v > 10 {
		return nil, control.Invalid(prefix+"value", prefix+"value must be an integer from -10 to 10")
	}
	f.Value = int(v)
	if len(b.Weight) > 0 && !bytes.Equal(b.Weight, []byte("null")) {
		wt, err := strconv.ParseFloat(string(b.Weight), 64)
		if err != nil || b.Weight[0] == '"' || math.IsNaN(wt) || wt < 0 || wt > 1 {
			return nil, control.Invalid(prefix+"weight", prefix+"weight must be a number from 0 to 1")
		}
		f.Weight = wt
	}
	if md := bytes.TrimSpace(b.Metadata); len(md) > 0 && !bytes.Equal(md, []byte("null")) {
		if md[0] != '{' || len(md) > feedbackMetadataMax {
			return nil, control.Invalid(prefix+"metadata", prefix+"metadata must be a JSON object of at most 16 KiB")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, md); err != nil {
			return nil, control.Invalid(prefix+"metadata", prefix+"metadata must be a JSON object of at most 16 KiB")
		}
		f.Metadata = buf.Bytes()
	}
	return f, nil
}

// feedbackWorkspace returns the workspace feedback goes to: the key's,
// or for an organisation key the one it names in the query or the body
// (none when it names none). A workspace key naming another is 403.
func feedbackWorkspace(id gateway.Identity, query, body string) (string, error) {
	named := query
	if body != "" {
		if query != "" && query != body {
			return "", control.Invalid("workspace_id", "the query and the body name different workspaces")
		}
		named = body
	}
	if id.Type == gateway.KeyOrganisation {
		return named, nil
	}
	if named != "" && named != id.WorkspaceID {
		return "", control.OtherWorkspace()
	}
	return id.WorkspaceID, nil
}
