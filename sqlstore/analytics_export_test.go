package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelgateway/gateway/observe"
)

// ExplainAggregate returns SQLite's EXPLAIN QUERY PLAN of the query
// AggregateLogs runs on the records for a (withFeedback: on those with
// feedback), one step a line.
func (s *Store) ExplainAggregate(ctx context.Context, a *observe.Aggregation, withFeedback bool) (string, error) {
	q, args, _ := s.aggregateQuery(a, withFeedback)
	return s.explain(ctx, q, args)
}

// ExplainRollup returns SQLite's EXPLAIN QUERY PLAN of the rollup
// queries AggregateLogs runs for the whole hours of a: one per span of
// hourly or daily rollups.
func (s *Store) ExplainRollup(ctx context.Context, a *observe.Aggregation) (string, error) {
	from, to, ok := s.rollupHours(a)
	if !ok {
		return "(no rollup)\n", nil
	}
	spans, err := s.rollupSpans(ctx, a, from, to)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, sp := range spans {
		q, args := rollupQuery(a, sp)
		plan, err := s.explain(ctx, s.dialect.rebind(q), args)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%d %s (%s to %s):\n%s", (sp.to-sp.from)/sp.tables().width, map[bool]string{false: "hours", true: "days"}[sp.daily],
			time.UnixMicro(sp.from).UTC().Format(time.RFC3339), time.UnixMicro(sp.to).UTC().Format(time.RFC3339), plan)
	}
	return b.String(), nil
}

func (s *Store) explain(ctx context.Context, q string, args []any) (string, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return "", err
		}
		b.WriteString(detail + "\n")
	}
	return b.String(), rows.Err()
}
