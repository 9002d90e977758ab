package observe

// Names of the package's own that its external tests reach.
type (
	LogWire      = logWire
	FeedbackBody = feedbackBody
)

var (
	Buckets            = buckets
	AnalyticsParams    = analyticsParams
	DecodeStrict       = decodeStrict
	FeedbackOf         = feedbackOf
	ParseExportFilters = parseExportFilters
	ExportFields       = exportFields
	AppendExportLine   = appendExportLine
)

const (
	AnalyticsBucketsMax = analyticsBucketsMax
	ExportBatch         = exportBatch
	ExportHeartbeat     = exportHeartbeat
	ExportPageSizeMax   = exportPageSizeMax
)

// AnalyticsPaths returns the paths of the analytics routes.
func AnalyticsPaths() []string {
	var out []string
	for p := range analyticsRoutes {
		out = append(out, p)
	}
	return out
}

// WaitExports waits for the export jobs started here to end.
func (rs *Routes) WaitExports() { rs.exports.wg.Wait() }
