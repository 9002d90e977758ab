package gateway

import (
	"context"
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
