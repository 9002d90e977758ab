package memstore

import (
	"context"
	"slices"

	"github.com/modelgateway/gateway/observe"
)

// AggregateLogs implements observe.Aggregator: AggregateRecords over the
// records the store keeps and its feedback.
func (s *Store) AggregateLogs(ctx context.Context, a *observe.Aggregation) ([]observe.Aggregate, error) {
	var feedback []observe.Feedback
	if a.Measures&observe.MeasureFeedback != 0 || slices.Contains(a.GroupBy, observe.DimFeedbackValue) ||
		a.WeightedFeedback.HasMin || a.WeightedFeedback.HasMax {
		var err error
		if feedback, err = s.FeedbackOf(ctx, a.Query.WorkspaceID, nil); err != nil {
			return nil, err
		}
	}
	s.logMu.RLock()
	defer s.logMu.RUnlock()
	return observe.AggregateRecords(a, slices.Values(s.logs), feedback), nil
}
