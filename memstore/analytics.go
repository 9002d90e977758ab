package gateway

import (
	"context"
	"slices"
)

var _ LogAggregator = (*MemoryStore)(nil)

// AggregateLogs implements LogAggregator: AggregateRecords over the
// records the store keeps and its feedback.
func (s *MemoryStore) AggregateLogs(ctx context.Context, a *Aggregation) ([]Aggregate, error) {
	var feedback []Feedback
	if a.Measures&MeasureFeedback != 0 || slices.Contains(a.GroupBy, DimFeedbackValue) ||
		a.WeightedFeedback.HasMin || a.WeightedFeedback.HasMax {
		var err error
		if feedback, err = s.FeedbackOf(ctx, a.Query.WorkspaceID, nil); err != nil {
			return nil, err
		}
	}
	ag := newRecordAggregator(a, feedback)
	s.logMu.RLock()
	defer s.logMu.RUnlock()
	for _, rec := range s.logs {
		ag.add(rec)
	}
	return ag.result(), nil
}
