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
