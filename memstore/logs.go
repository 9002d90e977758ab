package gateway

import (
	"context"
	"slices"
)

// memoryLogsMax is how many request logs a MemoryStore keeps: past it,
// the oldest added go.
const memoryLogsMax = 10000

// AddLogs implements LogStore: it keeps copies of recs. Once the store
// holds 10,000 records, each new one drops the oldest added.
func (s *MemoryStore) AddLogs(_ context.Context, recs []*RequestLog) error {
	cs := make([]*RequestLog, len(recs))
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

// Log implements LogStore: a copy the caller may change.
func (s *MemoryStore) Log(_ context.Context, workspaceID, id string) (*RequestLog, error) {
	s.logMu.RLock()
	defer s.logMu.RUnlock()
	for _, rec := range s.logs {
		if rec.ID == id && (workspaceID == "" || rec.WorkspaceID == workspaceID) {
			return cloneLog(rec), nil
		}
	}
	return nil, ErrNotFound
}

// Logs implements LogStore: copies of the records q selects, newest
// first, without their bodies.
// A q.After that names no selected record gives an empty page.
func (s *MemoryStore) Logs(_ context.Context, q *LogQuery) ([]RequestLog, error) {
	s.logMu.RLock()
	var sel []*RequestLog
	for _, rec := range s.logs {
		if q.Match(rec) {
			sel = append(sel, rec)
		}
	}
	s.logMu.RUnlock()
	slices.SortFunc(sel, compareLogs)
	if q.After != "" {
		if i := slices.IndexFunc(sel, func(rec *RequestLog) bool { return rec.ID == q.After }); i >= 0 {
			sel = sel[i+1:]
		} else {
			sel = nil
		}
	}
	if q.Limit > 0 && len(sel) > q.Limit {
		sel = sel[:q.Limit]
	}
	out := make([]RequestLog, len(sel))
	for i, rec := range sel {
		out[i] = *cloneLog(rec)
		// Pages leave the bodies out, as sqlstore's do: Log has them.
		out[i].RequestBody, out[i].RequestBodyTruncated, out[i].ResponseBody, out[i].ResponseBodyTruncated = "", false, "", false
	}
	return out, nil
}
