package guardrail

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Record is a stored guardrail, as the /guardrails routes write it: its
// checks, what their failures mean, and who it belongs to.
type Record struct {
	ID          string // a UUID, made at creation
	Slug        string // guard_ and 16 letters and digits, made at creation
	Name        string
	WorkspaceID string // "" for an organisation's guardrail, which every workspace may attach
	Checks      []CheckDefinition
	Actions     Actions
	StreamMode  string // StreamObserve or StreamBuffer
	OnError     string // OnErrorDeny or OnErrorAllow
	VersionID   string // changes with every update
	OwnerID     string // the API key that created it
	UpdatedBy   string // the API key that last updated it
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Values of Record.StreamMode and Record.OnError.
const (
	StreamObserve = "observe" // output checks read a stream as it goes by and report at its end
	StreamBuffer  = "buffer"  // a stream is held until its output checks passed
	OnErrorDeny   = "deny"    // a check that errors or times out fails
	OnErrorAllow  = "allow"   // a check that errors or times out passes
)

// Actions says what a guardrail's outcome does, as the reference API
// writes it (deny, async, on_success, on_fail).
type Actions struct {
	// Deny refuses a request or answer that fails a check, with a 446;
	// otherwise the failure is reported and the status is 246.
	Deny bool

	// Async runs the checks after the request went on, never holding
	// it: they deny nothing and report only through feedback and logs.
	Async bool

	// OnSuccess and OnFail, when not nil, are recorded as feedback on
	// the request's trace when the guardrail passes or fails.
	OnSuccess, OnFail *FeedbackAction

	// Message is the shorthand's message, kept for people.
	Message string
}

// FeedbackAction is feedback a guardrail records on a trace.
type FeedbackAction struct {
	Value    int     `json:"value"`
	Weight   float64 `json:"weight"`
	Metadata string  `json:"metadata"`
}

// Store reads the guardrails a config attaches by id. Guardrail returns
// the guardrail of workspace ws, or of the organisation (WorkspaceID
// ""), whose ID or Slug is ref, or an error wrapping gateway.ErrNotFound.
// The record is shared and must not be changed. Implementations must be
// safe for concurrent use.
type Store interface {
	Guardrail(ctx context.Context, ws, ref string) (*Record, error)
}

// AdminStore is a Store the /guardrails routes write. ListGuardrails
// returns the guardrails of workspace ws (every one when all is true),
// newest first. PutGuardrail stores rec, replacing the record of its ID;
// a new record whose Slug another holds is gateway.ErrConflict.
// DeleteGuardrail removes the record of ID id, or returns an error
// wrapping gateway.ErrNotFound.
type AdminStore interface {
	Store
	ListGuardrails(ctx context.Context, ws string, all bool) ([]*Record, error)
	PutGuardrail(ctx context.Context, rec *Record) error
	DeleteGuardrail(ctx context.Context, id string) error
}

// Definition returns the guardrail rec describes, for Registry.Compile.
func (rec *Record) Definition() Definition {
	return Definition{ID: rec.Slug, Checks: rec.Checks, Deny: rec.Actions.Deny, AllowOnError: rec.OnError == OnErrorAllow}
}

// body is a guardrail object as the routes and inline configs take it.
type body struct {
	Name           *string           `json:"name"`
	WorkspaceID    *string           `json:"workspace_id"`
	OrganisationID *string           `json:"organisation_id"`
	ID             *string           `json:"id"`
	Checks         []CheckDefinition `json:"checks"`
	Actions        json.RawMessage   `json:"actions"`
	StreamMode     *string           `json:"stream_mode"`
	OnError        *string           `json:"on_error"`
}

// maxChecks bounds the checks of one guardrail.
const maxChecks = 32

// settings checks and returns the parts of b beside its name and owner:
// checks (required when req), actions, stream_mode and on_error, over
// rec's. Compile checks each check's parameters.
func (b *body) settings(rec *Record, req bool) *Error {
	if b.Checks != nil || req {
		if len(b.Checks) == 0 {
			return &Error{Code: CodeInvalidParameter, Param: "checks", Message: "a guardrail needs at least one check"}
		}
		if len(b.Checks) > maxChecks {
			return &Error{Code: CodeInvalidParameter, Param: "checks", Message: "a guardrail has at most " + strconv.Itoa(maxChecks) + " checks"}
		}
		rec.Checks = b.Checks
	}
	if b.Actions != nil {
		a, err := decodeActions(b.Actions)
		if err != nil {
			return err
		}
		rec.Actions = a
	}
	if b.StreamMode != nil {
		if *b.StreamMode != StreamObserve && *b.StreamMode != StreamBuffer {
			return &Error{Code: CodeInvalidParameter, Param: "stream_mode", Message: "must be observe or buffer"}
		}
		rec.StreamMode = *b.StreamMode
	}
	if b.OnError != nil {
		if *b.OnError != OnErrorDeny && *b.OnError != OnErrorAllow {
			return &Error{Code: CodeInvalidParameter, Param: "on_error", Message: "must be deny or allow"}
		}
		rec.OnError = *b.OnError
	}
	if rec.StreamMode == "" {
		rec.StreamMode = StreamObserve
	}
	if rec.OnError == "" {
		rec.OnError = OnErrorDeny
	}
	return nil
}

// decodeActions reads actions as the reference writes them (deny, async,
// on_success and on_fail feedback objects) or as its examples' shorthand
// does (on_fail or onFail: deny, block or log; on_success: continue;
// message).
func decodeActions(raw json.RawMessage) (Actions, *Error) {
	var a Actions
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return a, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return a, &Error{Code: CodeInvalidParameter, Param: "actions", Message: "must be an object"}
	}
	for k, v := range m {
		param := "actions." + k
		bad := func(msg string) (Actions, *Error) {
			return a, &Error{Code: CodeInvalidParameter, Param: param, Message: msg}
		}
		switch k {
		case "deny", "async":
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return bad("must be true or false")
			}
			if k == "deny" {
				a.Deny = a.Deny || b
			} else {
				a.Async = b
			}
		case "message":
			if json.Unmarshal(v, &a.Message) != nil || len(a.Message) > 1024 {
				return bad("must be a string of at most 1024 bytes")
			}
		case "on_success", "onSuccess", "on_fail", "onFail":
			fail := k == "on_fail" || k == "onFail"
			var s string
			if json.Unmarshal(v, &s) == nil {
				switch {
				case fail && (s == "deny" || s == "block"):
					a.Deny = true
				case fail && s == "log", !fail && s == "continue":
				default:
					if fail {
						return bad("must be deny, block or log, or an object with feedback")
					}
					return bad("must be continue, or an object with feedback")
				}
				continue
			}
			var o struct {
				Feedback *FeedbackAction `json:"feedback"`
			}
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.DisallowUnknownFields()
			if dec.Decode(&o) != nil {
				return bad("must be an object with feedback: value, weight, metadata")
			}
			if f := o.Feedback; f != nil {
				if f.Value < -10 || f.Value > 10 {
					return bad("feedback.value must be -10 to 10")
				}
				if f.Weight < 0 || f.Weight > 1 {
					return bad("feedback.weight must be 0 to 1")
				}
				if fail {
					a.OnFail = f
				} else {
					a.OnSuccess = f
				}
			}
		default:
			return bad("is not an action: deny, async, on_success, on_fail")
		}
	}
	return a, nil
}

// actionsJSON is Actions as the routes answer it.
func actionsJSON(a Actions) map[string]any {
	m := map[string]any{"deny": a.Deny, "async": a.Async}
	if a.OnSuccess != nil {
		m["on_success"] = map[string]any{"feedback": a.OnSuccess}
	}
	if a.OnFail != nil {
		m["on_fail"] = map[string]any{"feedback": a.OnFail}
	}
	if a.Message != "" {
		m["message"] = a.Message
	}
	return m
}

// validName checks a guardrail's name: 1 to 255 bytes without control
// characters.
func validName(s string) *Error {
	if strings.TrimSpace(s) == "" || len(s) > 255 || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return &Error{Code: CodeInvalidParameter, Param: "name", Message: "must be 1 to 255 bytes without control characters"}
	}
	return nil
}

// MarshalJSON encodes a as the reference API writes actions.
func (a Actions) MarshalJSON() ([]byte, error) { return json.Marshal(actionsJSON(a)) }

// UnmarshalJSON decodes actions as the reference API or its examples'
// shorthand write them.
func (a *Actions) UnmarshalJSON(data []byte) error {
	v, err := decodeActions(data)
	if err != nil {
		return err
	}
	*a = v
	return nil
}
