package observe

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelgateway/gateway"
)

// Pacing and bounds of export jobs.
const (
	exportBatch       = 500              // records read from the Store at a time
	exportHeartbeat   = 5 * time.Second  // a running job moves its UpdatedAt at least this often…
	exportStaleAfter  = 2 * time.Minute  // …so that one unmoved for this long has lost its gateway
	exportMaxBytes    = 256 << 20        // JSON Lines an export may write, before compression
	exportWriteWithin = 30 * time.Second // bound of a job's last write to the store
	exportCountWithin = 2 * time.Minute  // bound of counting an export's records
	exportSwapTries   = 8                // compare-and-swap attempts of a cancel racing the job's heartbeat
	exportMinGap      = time.Microsecond // UpdatedAt moves by at least this, the stores' precision
)

// Wording and markers of exports.
const (
	exportNoWorkspace = "\x00" // the workspace of a workspace key of none: matches nothing
	exportTimeFormat  = time.RFC3339Nano
	exportDescDraft   = "draft: start it to write the records out"
	exportDescStopped = "stopped: cancelled before it finished"
	exportDescGone    = "failed: the gateway running it stopped before it finished; create a new export"
)

// errExportTooLarge stops a job whose records pass exportMaxBytes.
var errExportTooLarge = errors.New("gateway: export too large")

// exportRunner runs the log exports started on this gateway, each in a
// goroutine it owns until the job ends or close stops it. The zero value
// is ready to use; it is safe for concurrent use.
type exportRunner struct {
	mu     sync.Mutex                    // guards jobs and closed
	jobs   map[string]context.CancelFunc // by export id, the jobs running here
	closed bool
	wg     sync.WaitGroup // the jobs' goroutines
}

// start runs run in a goroutine of its own under a context that cancel
// and close cancel. It reports false, running nothing, once close was
// called.
func (x *exportRunner) start(id string, run func(ctx context.Context)) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	if x.jobs == nil {
		x.jobs = make(map[string]context.CancelFunc)
	}
	x.jobs[id] = cancel
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		defer func() {
			x.mu.Lock()
			delete(x.jobs, id)
			x.mu.Unlock()
			cancel()
		}()
		run(ctx)
	}()
	return true
}

// cancel stops the job of export id, if it runs here.
func (x *exportRunner) cancel(id string) {
	x.mu.Lock()
	if c := x.jobs[id]; c != nil {
		c()
	}
	x.mu.Unlock()
}

// running reports whether the job of export id runs here.
func (x *exportRunner) running(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.jobs[id] != nil
}

// close stops every job and waits for their goroutines to end; each
// records its export as failed. Later starts run nothing.
func (x *exportRunner) close() {
	x.mu.Lock()
	x.closed = true
	for _, c := range x.jobs {
		c()
	}
	x.mu.Unlock()
	x.wg.Wait()
}

// exportNow is the time of a change to an export that was last changed
// at prev: now at the store's precision, and after prev, so that a
// compare-and-swap tells every change apart.
func (rs *Routes) exportNow(prev time.Time) time.Time {
	now := rs.clock().UTC().Truncate(time.Microsecond)
	if !now.After(prev) {
		now = prev.Add(exportMinGap)
	}
	return now
}

// scanExport calls each for every record f selects, in the order of GET
// /logs (after f.Skip of them, at most f.Limit), reading them a batch at
// a time from logs, and calls tick (when not nil) between batches. An
// error of each or tick stops it and is returned.
func scanExport(ctx context.Context, logs Store, f *exportFilter, each func(*gateway.RequestLog) error, tick func() error) error {
	q := *f.Query
	q.After = ""
	skipped, n := 0, 0
	for {
		q.Limit = exportBatch
		recs, err := logs.Logs(ctx, &q)
		if err != nil {
			return err
		}
		for i := range recs {
			if !f.match(&recs[i]) {
				continue
			}
			if skipped < f.Skip {
				skipped++
				continue
			}
			if err := each(&recs[i]); err != nil {
				return err
			}
			if n++; n >= f.Limit {
				return nil
			}
		}
		if len(recs) < q.Limit {
			return nil
		}
		q.After = recs[len(recs)-1].ID
		if tick != nil {
			if err := tick(); err != nil {
				return err
			}
		}
	}
}

// countExport returns how many records f selects now.
func countExport(ctx context.Context, logs Store, f *exportFilter) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, exportCountWithin)
	defer cancel()
	var n int64
	err := scanExport(ctx, logs, f, func(*gateway.RequestLog) error { n++; return nil }, nil)
	return n, err
}

// runExport is the job of export cur, which the caller moved to
// in_progress at started: it writes the records of its filters, up to
// started (the window is pinned, so that records arriving meanwhile do
// not change the result), as gzip-compressed JSON Lines, and stores them
// with the status success; or records failed when the log store fails,
// the records pass exportMaxBytes, or ctx ends (the gateway closing). A
// cancel (the stored export no longer cur) stops it without a write.
func (rs *Routes) runExport(ctx context.Context, store ExportStore, logs Store, cur *Export, started time.Time) {
	finish := func(status ExportStatus, desc string, total int64, content []byte) {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exportWriteWithin)
		defer cancel()
		next := cur.Clone()
		next.Status, next.Description, next.Total, next.UpdatedAt = status, desc, total, rs.exportNow(cur.UpdatedAt)
		if err := store.UpdateLogExport(wctx, cur, next, content); err != nil && !errors.Is(err, gateway.ErrConflict) && !errors.Is(err, gateway.ErrNotFound) {
			rs.errLog.Error("gateway: log export: recording its end failed", "export", cur.ID, "status", string(status), "err", err)
		}
	}
	_, f, err := parseExportFilters(cur.Filters, cur.WorkspaceID)
	if err != nil {
		finish(ExportFailed, "failed: its filters are no longer valid: "+err.Error(), 0, nil)
		return
	}
	fields, err := exportFields(cur.Fields)
	if err != nil {
		finish(ExportFailed, "failed: its requested_data is no longer valid: "+err.Error(), 0, nil)
		return
	}
	if f.Query.End.IsZero() || f.Query.End.After(started) {
		f.Query.End = started
	}
	var (
		out   bytes.Buffer
		zw    = gzip.NewWriter(&out)
		line  []byte
		size  int64
		total int64
		beat  = started
	)
	each := func(rec *gateway.RequestLog) error {
		var err error
		if line, err = appendExportLine(line[:0], rec, fields); err != nil {
			return err
		}
		if size += int64(len(line)); size > exportMaxBytes {
			return errExportTooLarge
		}
		total++
		_, err = zw.Write(line)
		return err
	}
	tick := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := rs.clock()
		if now.Sub(beat) < exportHeartbeat {
			return nil
		}
		beat = now
		next := cur.Clone()
		next.UpdatedAt = rs.exportNow(cur.UpdatedAt)
		if err := store.UpdateLogExport(ctx, cur, next, nil); err != nil {
			return err
		}
		cur = next
		return nil
	}
	err = scanExport(ctx, logs, f, each, tick)
	if err == nil {
		err = zw.Close()
	}
	switch {
	case errors.Is(err, gateway.ErrConflict), errors.Is(err, gateway.ErrNotFound):
		// Cancelled (or marked failed as stale) by another request: it
		// says what became of the export.
	case errors.Is(err, errExportTooLarge):
		finish(ExportFailed, fmt.Sprintf("failed: the records pass %d MiB; narrow the filters or lower filters.page_size", exportMaxBytes>>20), 0, nil)
	case ctx.Err() != nil:
		finish(ExportFailed, exportDescGone, 0, nil)
	case err != nil:
		rs.errLog.Error("gateway: log export failed", "export", cur.ID, "err", err)
		finish(ExportFailed, "failed: the log store could not be read; create a new export", 0, nil)
	default:
		finish(ExportSuccess, fmt.Sprintf("success: %d records created up to %s", total, started.UTC().Format(exportTimeFormat)), total, out.Bytes())
	}
}
