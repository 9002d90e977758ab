package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStreamCompletionLongLineBounded: one SSE event whose single data line
// is longer than Options.MaxBodyBytes ends the stream with an error wrapping
// ErrInvalidResponse, as an event split over many lines does.
func TestStreamCompletionLongLineBounded(t *testing.T) {
	const limit = 4096
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[],"pad":"`+
			strings.Repeat("x", 64<<10)+`"}`+"\n\ndata: [DONE]\n\n")
	})
	env := newCoreEnv(t, up, func(o *Options) { o.MaxBodyBytes = limit })
	var errs []error
	for _, err := range env.gw.StreamCompletion(context.Background(), &CompletionRequest{Model: "m"}, typedCaller) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrInvalidResponse) {
		t.Errorf("errors %v, want one wrapping ErrInvalidResponse", errs)
	}
}

// TestCompletionChoiceUnfinishedIsNull: a choice built in Go without a
// finish reason (a streamed choice still going) is written with
// finish_reason null, as providers write it, not "" (which is not one of
// stop, length and content_filter); decoded values still come back as
// they were.
func TestCompletionChoiceUnfinishedIsNull(t *testing.T) {
	out, err := json.Marshal(Completion{ID: "c", Created: 1, Model: "m", Choices: []CompletionChoice{{Text: "He"}}})
	if err != nil {
		t.Fatal(err)
	}
	typedSameJSON(t, out, []byte(`{"id":"c","object":"text_completion","created":1,"model":"m",
		"choices":[{"text":"He","index":0,"logprobs":null,"finish_reason":null}]}`))

	for _, doc := range []string{
		`{"text":"","index":0,"logprobs":null,"finish_reason":""}`,
		`{"text":"","index":0,"logprobs":null,"finish_reason":null}`,
		`{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}`,
		`{"text":"","index":0,"logprobs":null}`,
	} {
		var c CompletionChoice
		if err := json.Unmarshal([]byte(doc), &c); err != nil {
			t.Fatalf("decode %s: %v", doc, err)
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if doc == `{"text":"","index":0,"logprobs":null}` {
			// finish_reason is required: an absent one is written as null.
			doc = `{"text":"","index":0,"logprobs":null,"finish_reason":null}`
		}
		typedSameJSON(t, out, []byte(doc))
	}
}

// TestStreamCompletionErrorEvent: an error object in place of a
// completion ends the stream with that error, however it is spaced; a
// completion whose text mentions "error" is a completion.
func TestStreamCompletionErrorEvent(t *testing.T) {
	for _, tc := range []struct {
		name, event string
		wantErr     bool
	}{
		{"compact", `{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`, true},
		{"spaced", `{ "error" : { "message": "overloaded", "type": "server_error" } }`, true},
		{"text mentions error", `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"text":"\"error\"","index":0,"logprobs":null,"finish_reason":null}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: "+tc.event+"\n\ndata: [DONE]\n\n")
			})
			env := newCoreEnv(t, up, nil)
			var errs []error
			events := 0
			for c, err := range env.gw.StreamCompletion(context.Background(), &CompletionRequest{Model: "m"}, typedCaller) {
				if err != nil {
					errs = append(errs, err)
				} else if c != nil {
					events++
				}
			}
			var ge *Error
			switch {
			case tc.wantErr && (len(errs) != 1 || !errors.As(errs[0], &ge) || ge.Message != "overloaded"):
				t.Errorf("errors %v, want the provider's error", errs)
			case !tc.wantErr && (len(errs) != 0 || events != 1):
				t.Errorf("%d events and errors %v, want one completion", events, errs)
			}
		})
	}
}
