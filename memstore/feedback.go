package memstore

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
)

// memoryFeedbackMax is how much feedback a Store keeps: past it,
// the oldest added goes.
const memoryFeedbackMax = 100000

// AddFeedback implements observe.FeedbackStore: it keeps copies of fs. Once the
// store holds 100,000, each new one drops the oldest added.
func (s *Store) AddFeedback(_ context.Context, fs []*observe.Feedback) error {
	cs := make([]*observe.Feedback, len(fs))
	for i, f := range fs {
		cs[i] = cloneFeedback(f)
	}
	s.feedbackMu.Lock()
	defer s.feedbackMu.Unlock()
	s.feedback = append(s.feedback, cs...)
	if over := len(s.feedback) - memoryFeedbackMax; over > 0 {
		s.feedback = slices.Delete(s.feedback, 0, over)
	}
	return nil
}

// UpdateFeedback implements observe.FeedbackStore.
func (s *Store) UpdateFeedback(_ context.Context, f *observe.Feedback) (*observe.Feedback, error) {
	s.feedbackMu.Lock()
	defer s.feedbackMu.Unlock()
	for i, old := range s.feedback {
		if old.ID == f.ID && (f.WorkspaceID == "" || old.WorkspaceID == f.WorkspaceID) {
			c := cloneFeedback(old)
			c.Value, c.Weight, c.UpdatedAt = f.Value, f.Weight, f.UpdatedAt
			if f.Metadata != nil {
				c.Metadata = cloneFeedback(f).Metadata
			}
			s.feedback[i] = c
			return cloneFeedback(c), nil
		}
	}
	return nil, gateway.ErrNotFound
}

// FeedbackOf implements observe.FeedbackStore.
func (s *Store) FeedbackOf(_ context.Context, workspaceID string, traceIDs []string) ([]observe.Feedback, error) {
	s.feedbackMu.RLock()
	defer s.feedbackMu.RUnlock()
	var out []observe.Feedback
	for _, f := range s.feedback {
		if (workspaceID == "" || f.WorkspaceID == workspaceID) && (traceIDs == nil || slices.Contains(traceIDs, f.TraceID)) {
			out = append(out, *cloneFeedback(f))
		}
	}
	return out, nil
}

// cloneFeedback returns a copy of f sharing no memory with it.
func cloneFeedback(f *observe.Feedback) *observe.Feedback {
	c := *f
	if f.Metadata != nil {
		c.Metadata = append(json.RawMessage(nil), f.Metadata...)
	}
	return &c
}
