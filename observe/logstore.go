package gateway

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// LogStore keeps request logs, to be asked later (Options.Logs): GET /logs
// and GET /logs/{id} read them, POST /logs adds custom ones. MemoryStore
// implements it; the sqlstore sub-module keeps them in SQLite or Postgres.
//
// The gateway hands every data-plane request's record to AddLogs in
// batches, from a goroutine of its own and never from a request's: a
// store that stalls makes records wait in a bounded queue and then be
// dropped and counted (Gateway.LogsDropped), never a response wait.
// AddLogs must not keep or modify recs after it returns.
//
// Logs returns the records q selects, newest first (by Time, then ID),
// at most q.Limit of them, starting after the record q.After names,
// and may leave out their bodies (RequestLog.RequestBody, ResponseBody).
// Log returns the record id of workspace workspaceID (of any workspace
// when it is empty), bodies included, or ErrNotFound. Implementations
// must be safe for concurrent use.
type LogStore interface {
	AddLogs(ctx context.Context, recs []*RequestLog) error
	Log(ctx context.Context, workspaceID, id string) (*RequestLog, error)
	Logs(ctx context.Context, q *LogQuery) ([]RequestLog, error)
}

// LogQuery selects request logs: the filters of GET /logs and of the
// analytics routes. A zero field matches every record; the lists match a
// record holding any of their values; every pair of Metadata must be in
// the record's metadata.
type LogQuery struct {
	WorkspaceID string
	Start, End  time.Time // Time within [Start, End]

	StatusCodes []int
	Models      []ProviderModel // provider and model, as ai_org_model names them
	APIKeyIDs   []string
	VirtualKeys []string
	Configs     []string
	TraceIDs    []string
	Metadata    map[string]string

	PromptTokens, CompletionTokens, TotalTokens Range[int64]
	Cost                                        Range[float64] // USD

	// After is the ID of the last record of the previous page: the page
	// starts with the record after it in the order of Logs. Limit bounds
	// the page; zero means no bound.
	After string
	Limit int
}

// ProviderModel names a model of a provider.
type ProviderModel struct {
	Provider, Model string
}

// Range bounds a value on either side, inclusively; a side without its
// Has flag is open.
type Range[T int64 | float64] struct {
	Min, Max       T
	HasMin, HasMax bool
}

// Contains reports whether v is within r.
func (r Range[T]) Contains(v T) bool {
	return (!r.HasMin || v >= r.Min) && (!r.HasMax || v <= r.Max)
}

// Match reports whether q selects rec, paging aside.
func (q *LogQuery) Match(rec *RequestLog) bool {
	if q.WorkspaceID != "" && rec.WorkspaceID != q.WorkspaceID ||
		!q.Start.IsZero() && rec.Time.Before(q.Start) || !q.End.IsZero() && rec.Time.After(q.End) ||
		len(q.StatusCodes) > 0 && !slices.Contains(q.StatusCodes, rec.Status) ||
		len(q.Models) > 0 && !slices.Contains(q.Models, ProviderModel{rec.Provider, rec.Model}) ||
		len(q.APIKeyIDs) > 0 && !slices.Contains(q.APIKeyIDs, rec.KeyID) ||
		len(q.VirtualKeys) > 0 && !slices.Contains(q.VirtualKeys, rec.VirtualKey) ||
		len(q.Configs) > 0 && !slices.Contains(q.Configs, rec.ConfigID) ||
		len(q.TraceIDs) > 0 && !slices.Contains(q.TraceIDs, rec.TraceID) ||
		!q.PromptTokens.Contains(rec.PromptTokens) || !q.CompletionTokens.Contains(rec.CompletionTokens) ||
		!q.TotalTokens.Contains(rec.TotalTokens) || !q.Cost.Contains(rec.Cost) {
		return false
	}
	for k, v := range q.Metadata {
		if got, ok := rec.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// compareLogs orders records as LogStore.Logs returns them: newest first,
// then by ID, descending.
func compareLogs(a, b *RequestLog) int {
	if c := b.Time.Compare(a.Time); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}

// cloneLog returns a copy of rec sharing no memory with it.
func cloneLog(rec *RequestLog) *RequestLog {
	c := *rec
	c.Metadata = maps.Clone(rec.Metadata)
	return &c
}

// BatchLogSink is a LogSink that takes the records of its queue a batch at
// a time, in order, as a store writes them best: LogBatch is called in
// place of Log for every batch. The slice is the sink's only for the
// call; the records are its to keep.
type BatchLogSink interface {
	LogSink
	LogBatch(recs []*RequestLog)
}

// storeWriteTimeout bounds one AddLogs: past it, the batch is dropped and
// counted, and the queue moves on.
const storeWriteTimeout = 10 * time.Second

// storeSink writes the records of its queue to a LogStore, a batch at a
// time. A batch the store refuses is dropped and counted; the first
// failure of a run, and the recovery, are logged.
type storeSink struct {
	store   LogStore
	errLog  *slog.Logger
	dropped *atomic.Int64 // its queue's
	failing bool
}

// Log implements LogSink.
func (s *storeSink) Log(rec *RequestLog) { s.LogBatch([]*RequestLog{rec}) }

// LogBatch implements BatchLogSink.
func (s *storeSink) LogBatch(recs []*RequestLog) {
	ctx, cancel := context.WithTimeout(context.Background(), storeWriteTimeout)
	err := s.store.AddLogs(ctx, recs)
	cancel()
	switch {
	case err != nil:
		s.dropped.Add(int64(len(recs)))
		if !s.failing {
			s.failing = true
			s.errLog.Error("gateway: storing request logs failed; dropping them until it works again",
				"records", len(recs), "err", err)
		}
	case s.failing:
		s.failing = false
		s.errLog.Info("gateway: storing request logs works again")
	}
}
