package observe

import (
	"context"
	"slices"
	"time"

	"github.com/modelgateway/gateway"
)

// Store keeps request logs, to be asked later (Options.Logs of Mount):
// GET /logs and GET /logs/{id} read them, POST /logs adds custom ones,
// and the gateway's records reach it through Sink. The memstore package
// implements it; the sqlstore sub-module keeps them in SQLite or Postgres.
//
// The gateway hands every data-plane request's record to AddLogs in
// batches, from a goroutine of its own and never from a request's: a
// store that stalls makes records wait in a bounded queue and then be
// dropped and counted (gateway.Gateway.DroppedLogs), never a response wait.
// AddLogs must not keep or modify recs after it returns.
//
// Logs returns the records q selects, newest first (by Time, then ID),
// at most q.Limit of them, starting after the record q.After names,
// and may leave out their bodies (RequestLog.RequestBody, ResponseBody).
// Log returns the record id of workspace workspaceID (of any workspace
// when it is empty), bodies included, or ErrNotFound. Implementations
// must be safe for concurrent use.
type Store interface {
	AddLogs(ctx context.Context, recs []*gateway.RequestLog) error
	Log(ctx context.Context, workspaceID, id string) (*gateway.RequestLog, error)
	Logs(ctx context.Context, q *Query) ([]gateway.RequestLog, error)
}

// Query selects request logs: the filters of GET /logs and of the
// analytics routes. A zero field matches every record; the lists match a
// record holding any of their values; every pair of Metadata must be in
// the record's metadata.
type Query struct {
	WorkspaceID string
	Start, End  time.Time // Time within [Start, End]

	StatusCodes []int
	Models      []ProviderModel // provider and model, as ai_org_model names them
	APIKeyIDs   []string
	VirtualKeys []string
	Configs     []string
	TraceIDs    []string
	Metadata    map[string]string

	// Prompts selects the records of the completions of these prompts,
	// each named by its slug or its id: the records whose metadata
	// gateway.MetadataPrompt (the slug) or "_prompt_id" (the id, as
	// package prompt records it) is one of them.
	Prompts []string

	PromptTokens, CompletionTokens, TotalTokens Range[int64]
	Cost                                        Range[float64] // USD

	// After is the ID of the last record of the previous page: the page
	// starts with the record after it in the order of Logs. Limit bounds
	// the page; zero means no bound.
	After string
	Limit int
}

// MetadataPromptID is the metadata key of the id of the prompt whose
// completion a request log records (prompt.MetadataPromptID); its slug is
// under gateway.MetadataPrompt.
const MetadataPromptID = "_prompt_id"

// matchPrompt reports whether metadata names one of q.Prompts, by slug or
// by id.
func (q *Query) matchPrompt(md map[string]string) bool {
	for _, k := range []string{gateway.MetadataPrompt, MetadataPromptID} {
		if v, ok := md[k]; ok && slices.Contains(q.Prompts, v) {
			return true
		}
	}
	return false
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
func (q *Query) Match(rec *gateway.RequestLog) bool {
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
	if len(q.Prompts) > 0 && !q.matchPrompt(rec.Metadata) {
		return false
	}
	for k, v := range q.Metadata {
		if got, ok := rec.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Sink returns the LogSink that hands the gateway's request logs to
// store, a batch at a time (gateway.BatchLogSink), for the host to put in
// gateway.Options.LogSinks: every authenticated data-plane request's
// record then reaches store from a goroutine of the gateway's and never
// from a request's. A store that stalls makes records wait in a bounded
// queue and then be dropped and counted (gateway.Gateway.DroppedLogs),
// never a response wait; so is a batch AddLogs fails to keep, or does not
// keep within 10 seconds.
func Sink(store Store) gateway.BatchLogSink {
	if store == nil {
		panic("observe: Sink of a nil Store")
	}
	return storeSink{store}
}

// storeWriteTimeout bounds one AddLogs: past it, the batch is dropped and
// counted, and the queue moves on.
const storeWriteTimeout = 10 * time.Second

// storeSink writes the records of its queue to a Store.
type storeSink struct {
	store Store
}

// Log implements gateway.LogSink.
func (s storeSink) Log(rec *gateway.RequestLog) { s.LogBatch([]*gateway.RequestLog{rec}) }

// LogBatch implements gateway.BatchLogSink.
func (s storeSink) LogBatch(recs []*gateway.RequestLog) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeWriteTimeout)
	defer cancel()
	return s.store.AddLogs(ctx, recs)
}
