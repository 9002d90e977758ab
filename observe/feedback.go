package observe

import (
	"context"
	"encoding/json"
	"time"
)

// Feedback is a score given to a trace (the observability routes): POST /feedback makes
// it, PUT /feedback/{id} changes it, and the analytics routes read it
// with the request logs of its trace in its workspace.
type Feedback struct {
	ID          string
	WorkspaceID string
	TraceID     string
	Value       int     // −10 to 10
	Weight      float64 // 0 to 1
	// Metadata is the caller's JSON object, kept as given; nil for none.
	Metadata  json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// FeedbackStore keeps feedback (Options.Feedback of Mount). memstore.Store implements
// it, and so does the sqlstore sub-module.
//
// AddFeedback stores fs, whose IDs the gateway sets. UpdateFeedback
// replaces Value, Weight, UpdatedAt and, when f.Metadata is not nil,
// Metadata of the feedback f.ID of workspace f.WorkspaceID (of any
// workspace when it is empty) and returns the stored feedback, or
// ErrNotFound. FeedbackOf returns the feedback of
// workspace workspaceID (every workspace when it is empty) whose trace is
// one of traceIDs (any trace when traceIDs is nil), oldest first.
// Implementations must be safe for concurrent use and must not keep or
// modify what they are given.
type FeedbackStore interface {
	AddFeedback(ctx context.Context, fs []*Feedback) error
	UpdateFeedback(ctx context.Context, f *Feedback) (*Feedback, error)
	FeedbackOf(ctx context.Context, workspaceID string, traceIDs []string) ([]Feedback, error)
}
