package observe

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway/internal/control"
)

// The group routes of the reference: the window's figures by user, model
// or metadata value, the most requests first (then by the group's name),
// paged by page_size and current_page, as {"object":"list","total",
// "data"} where total counts every group.

// metadataKeyMax bounds the metadata key of /analytics/groups/metadata/{key}.
const metadataKeyMax = 256

// byRequests orders groups by requests, most first, then by name.
func byRequests(name func(a *Aggregate) string) func(a, b *Aggregate) int {
	return func(a, b *Aggregate) int {
		if c := cmp.Compare(b.Requests, a.Requests); c != 0 {
			return c
		}
		return strings.Compare(name(a), name(b))
	}
}

func groupList(total int, data []obj) obj {
	if data == nil {
		data = []obj{}
	}
	return obj{"object": "list", "total": total, "data": data}
}

// groupUsers groups by user: the value of the _user metadata; requests
// that name none are left out. As in the reference, requests and cost
// (cents) are strings.
func groupUsers(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	a := ar.aggregation(MeasureCost, DimMetadata)
	a.MetadataKey = UserMetadataKey
	groups, err := rs.aggregate(ctx, a)
	if err != nil {
		return nil, err
	}
	page := pageOfGroups(ar, groups, byRequests(func(a *Aggregate) string { return a.MetadataValue }))
	data := make([]obj, len(page))
	for i, a := range page {
		data[i] = obj{"object": "analytics-group", "user": a.MetadataValue, "requests": strconv.FormatInt(a.Requests, 10),
			"cost": strconv.FormatFloat(cents(a.Cost), 'f', -1, 64)}
	}
	return groupList(len(groups), data), nil
}

// groupModels groups by provider and model (ai_org and ai_model). As in
// the reference, requests is a string.
func groupModels(rs *Routes, ctx context.Context, ar *analyticsRequest, _ *http.Request) (any, error) {
	groups, err := rs.aggregate(ctx, ar.aggregation(0, DimModel))
	if err != nil {
		return nil, err
	}
	page := pageOfGroups(ar, groups, byRequests(func(a *Aggregate) string { return a.Provider + "\x00" + a.Model }))
	data := make([]obj, len(page))
	for i, a := range page {
		data[i] = obj{"object": "analytics-group", "ai_model": a.Model, "ai_org": a.Provider,
			"requests": strconv.FormatInt(a.Requests, 10)}
	}
	return groupList(len(groups), data), nil
}

// groupMetadata groups by the value of the metadata key of the path;
// requests without it are left out.
func groupMetadata(rs *Routes, ctx context.Context, ar *analyticsRequest, r *http.Request) (any, error) {
	key := r.PathValue("metadataKey")
	if key == "" || len(key) > metadataKeyMax {
		return nil, control.Invalid("metadataKey", "the metadata key must be 1 to 256 bytes")
	}
	a := ar.aggregation(MeasureCost|MeasureTokens|MeasureFeedback|MeasureLastSeen, DimMetadata)
	a.MetadataKey = key
	groups, err := rs.aggregate(ctx, a)
	if err != nil {
		return nil, err
	}
	page := pageOfGroups(ar, groups, byRequests(func(a *Aggregate) string { return a.MetadataValue }))
	data := make([]obj, len(page))
	for i, a := range page {
		data[i] = obj{"object": "analytics-group", "metadata_value": a.MetadataValue, "requests": a.Requests,
			"cost": cents(a.Cost), "avg_tokens": round2(ratio(float64(a.TotalTokens), float64(a.Requests))),
			"avg_weighted_feedback":  round2(ratio(a.FeedbackWeight, float64(a.Feedbacks))),
			"requests_with_feedback": a.RequestsWithFeedback, "last_seen": a.LastSeen.UTC().Format(time3339)}
	}
	return groupList(len(groups), data), nil
}

// time3339 is the layout of last_seen: RFC 3339 to the microsecond, as
// stores keep times.
const time3339 = "2006-01-02T15:04:05.999999Z07:00"
