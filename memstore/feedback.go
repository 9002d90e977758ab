package gateway

import (
	"context"
	"slices"
)

var _ FeedbackStore = (*MemoryStore)(nil)

// memoryFeedbackMax is how much feedback a MemoryStore keeps: past it,
// the oldest added goes.
const memoryFeedbackMax = 100000

// AddFeedback implements FeedbackStore: it keeps copies of fs. Once the
// store holds 100,000, each new one drops the oldest added.
func (s *MemoryStore) AddFeedback(_ context.Context, fs []*Feedback) error {
	cs := make([]*Feedback, len(fs))
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

// UpdateFeedback implements FeedbackStore.
func (s *MemoryStore) UpdateFeedback(_ context.Context, f *Feedback) (*Feedback, error) {
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
	return nil, ErrNotFound
}

// FeedbackOf implements FeedbackStore.
func (s *MemoryStore) FeedbackOf(_ context.Context, workspaceID string, traceIDs []string) ([]Feedback, error) {
	s.feedbackMu.RLock()
	defer s.feedbackMu.RUnlock()
	var out []Feedback
	for _, f := range s.feedback {
		if (workspaceID == "" || f.WorkspaceID == workspaceID) && (traceIDs == nil || slices.Contains(traceIDs, f.TraceID)) {
			out = append(out, *cloneFeedback(f))
		}
	}
	return out, nil
}
