package memstore

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
)

// memoryLogsMax is how many request logs a Store keeps: past it,
// the oldest added go.
const memoryLogsMax = 10000

// AddLogs implements observe.Store: it keeps copies of recs. Once the store
// holds 10,000 records, each new one drops the oldest added.
func (s *Store) AddLogs(_ context.Context, recs []*gateway.RequestLog) error {
	cs := make([]*gateway.RequestLog, len(recs))
	for i, rec := range recs {
		cs[i] = cloneLog(rec)
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.logs = append(s.logs, cs...)
	if over := len(s.logs) - memoryLogsMax; over > 0 {
		s.logs = slices.Delete(s.logs, 0, over)
	}
	return nil
}

// Log implements observe.Store: a copy the caller may change.
func (s *Store) Log(_ context.Context, workspaceID, id string) (*gateway.RequestLog, error) {
	s.logMu.RLock()
	defer s.logMu.RUnlock()
	for _, rec := range s.logs {
		if rec.ID == id && (workspaceID == "" || rec.WorkspaceID == workspaceID) {
			return cloneLog(rec), nil
		}
	}
	return nil, gateway.ErrNotFound
}

// Logs implements observe.Store: copies of the records q selects, newest
// first, without their bodies.
// A q.After that names no selected record gives an empty page.
func (s *Store) Logs(_ context.Context, q *observe.Query) ([]gateway.RequestLog, error) {
	s.logMu.RLock()
	var sel []*gateway.RequestLog
	for _, rec := range s.logs {
		if q.Match(rec) {
			sel = append(sel, rec)
		}
	}
	s.logMu.RUnlock()
	slices.SortFunc(sel, compareLogs)
	if q.After != "" {
		if i := slices.IndexFunc(sel, func(rec *gateway.RequestLog) bool { return rec.ID == q.After }); i >= 0 {
			sel = sel[i+1:]
		} else {
			sel = nil
		}
	}
	if q.Limit > 0 && len(sel) > q.Limit {
		sel = sel[:q.Limit]
	}
	out := make([]gateway.RequestLog, len(sel))
	for i, rec := range sel {
		out[i] = *cloneLog(rec)
		// Pages leave the bodies out, as sqlstore's do: Log has them.
		out[i].RequestBody, out[i].RequestBodyTruncated, out[i].ResponseBody, out[i].ResponseBodyTruncated = "", false, "", false
	}
	return out, nil
}

// compareLogs orders records as Logs returns them: newest first, then by
// ID, descending.
func compareLogs(a, b *gateway.RequestLog) int {
	if c := b.Time.Compare(a.Time); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}

// cloneLog returns a copy of rec sharing no memory with it.
func cloneLog(rec *gateway.RequestLog) *gateway.RequestLog {
	c := *rec
	c.Metadata = maps.Clone(rec.Metadata)
	return &c
}
