package budget

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// update serves PUT /policies/usage-limits/{id}: name,
// credit_limit, alert_threshold, periodic_reset and periodic_reset_days
// (null removes the last three), and reset_usage_for_value, the value key
// of an entity whose usage is set to zero. The policy is written with a
// compare-and-swap (see policyKind.update); the new fields are checked
// together, so that an alert_threshold above a lowered credit_limit is a
// 400. Changing the reset period starts a new period for every entity.
func (b *Stage) update(w http.ResponseWriter, r *http.Request, kind *control.PolicyKind[Policy], id gateway.Identity, pid string) error {
	data, err := control.ReadBody(r)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return control.Invalid("", "the body must be a JSON object")
	}
	if len(fields) == 0 {
		return control.Invalid("", "the body must set at least one of name, credit_limit, alert_threshold, periodic_reset, periodic_reset_days and reset_usage_for_value")
	}
	var (
		name, resetValue, reset *string
		credit, alert           *float64
		days                    *int
	)
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		raw := fields[k]
		null := string(raw) == "null"
		switch k {
		case "name":
			if err := json.Unmarshal(raw, &name); err != nil || name != nil && control.Label("name", *name) != nil {
				return control.Invalid("name", "name must be a string of at most 255 bytes without control characters, or null")
			}
			if name == nil {
				name = new(string)
			}
		case "credit_limit":
			if err := json.Unmarshal(raw, &credit); err != nil || credit == nil || !(*credit >= 0) || math.IsInf(*credit, 0) {
				return control.Invalid("credit_limit", "credit_limit must be a number of at least 0")
			}
		case "alert_threshold":
			if err := json.Unmarshal(raw, &alert); err != nil || alert != nil && !(*alert >= 0) {
				return control.Invalid("alert_threshold", "alert_threshold must be a number of at least 0, or null")
			}
			if null {
				alert = new(float64)
				*alert = -1 // removes it
			}
		case "periodic_reset":
			if err := json.Unmarshal(raw, &reset); err != nil || reset != nil && *reset != ResetWeekly && *reset != ResetMonthly {
				return control.Invalid("periodic_reset", "periodic_reset must be weekly, monthly or null")
			}
			if reset == nil {
				reset = new(string)
			}
		case "periodic_reset_days":
			if err := json.Unmarshal(raw, &days); err != nil || days != nil && (*days < 1 || *days > 365) {
				return control.Invalid("periodic_reset_days", "periodic_reset_days must be an integer from 1 to 365, or null")
			}
			if days == nil {
				days = new(int)
			}
		case "reset_usage_for_value":
			if err := json.Unmarshal(raw, &resetValue); err != nil || resetValue == nil {
				return control.Invalid("reset_usage_for_value", "reset_usage_for_value must be a string: the value key of an entity")
			}
		default:
			return control.Invalid(k, "unknown field "+control.Quote(k)+": name, credit_limit, alert_threshold, periodic_reset, periodic_reset_days and reset_usage_for_value can be changed")
		}
	}
	ctx := r.Context()
	err = kind.Update(r, id, pid, func(p *Policy) error {
		if p.Status == gateway.PolicyArchived {
			return kind.NotFound(pid) // deleted, as far as changes go
		}
		if name != nil {
			p.Name = *name
		}
		if credit != nil {
			p.CreditLimit = *credit
		}
		if alert != nil {
			p.AlertThreshold = alert
			if *alert < 0 {
				p.AlertThreshold = nil
			}
		}
		if reset != nil {
			p.PeriodicReset = *reset
			if *reset != "" && days == nil {
				p.PeriodicResetDays = 0 // the one replaces the other
			}
		}
		if days != nil {
			p.PeriodicResetDays = *days
			if *days > 0 && reset == nil {
				p.PeriodicReset = ""
			}
		}
		if resetValue != nil {
			p.LastResetAt = control.PolicyNow()
		}
		if e := p.check(); e != nil {
			return e
		}
		return nil
	})
	if err != nil {
		return err
	}
	if resetValue != nil {
		if _, err := b.counter.ResetUsage(ctx, pid, *resetValue); err != nil {
			return err
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// usageEntity is an entity of a policy as the entities list shows it.
type usageEntity struct {
	ID       string `json:"id"`
	ValueKey string `json:"value_key"`
	EntityUsage
}

// entityID is the id of the entity valueKey of policy pid: 32 hex digits
// of a digest, the same on every replica.
func entityID(pid, valueKey string) string {
	sum := sha256.Sum256([]byte(pid + "\x00" + valueKey))
	return hex.EncodeToString(sum[:16])
}

// entities returns the entities of p with their usage in the current
// period (zero for a counter of an earlier one), by value key.
func (b *Stage) entities(ctx context.Context, p *Policy) ([]usageEntity, error) {
	es, err := b.counter.UsageEntities(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	start, _ := p.period(b.now())
	period := periodKey(p.PeriodicReset, p.PeriodicResetDays, start)
	out := make([]usageEntity, 0, len(es))
	for _, e := range es {
		u := usageEntity{ID: entityID(p.ID, e.ValueKey), ValueKey: e.ValueKey, EntityUsage: EntityUsage{Status: EntityActive}}
		if e.Period == period {
			u.CurrentUsage, u.IsThresholdAlertsSent, u.IsExhaustedAlertsSent = e.Usage, e.ThresholdAlerted, e.ExhaustedAlerted
		}
		if u.CurrentUsage >= p.CreditLimit {
			u.Status = EntityExhausted
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ValueKey < out[j].ValueKey })
	return out, nil
}

func (b *Stage) listEntities(w http.ResponseWriter, r *http.Request, k *control.PolicyKind[Policy], id gateway.Identity, pid string) error {
	q := r.URL.Query()
	status, err := control.Enum(q, "status", "", EntityActive, EntityExhausted)
	if err != nil {
		return err
	}
	search := ""
	if vs, ok := q["search"]; ok {
		if len(vs) != 1 {
			return control.Invalid("search", "search must be given once")
		}
		search = vs[0]
	}
	page, err := httpapi.ParsePage(q)
	if err != nil {
		return control.Translate(err)
	}
	p, err := k.Lookup(r, id, pid)
	if err != nil {
		return err
	}
	es, err := b.entities(r.Context(), p)
	if err != nil {
		return err
	}
	data := []usageEntity{}
	total := 0
	for _, e := range es {
		if status != "" && e.Status != status || search != "" && !strings.Contains(e.ValueKey, search) {
			continue
		}
		if total >= page.Number*page.Size && len(data) < page.Size {
			data = append(data, e)
		}
		total++
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object string        `json:"object"`
		Data   []usageEntity `json:"data"`
		Total  int           `json:"total"`
	}{"list", data, total})
	return nil
}

// resetEntity serves PUT …/entities/{entityId}/reset: the entity,
// named by its id (or its value key), has its usage set to zero.
func (b *Stage) resetEntity(w http.ResponseWriter, r *http.Request, k *control.PolicyKind[Policy], id gateway.Identity, pid, eid string) error {
	ctx := r.Context()
	p, err := k.Lookup(r, id, pid)
	if err != nil {
		return err
	}
	es, err := b.counter.UsageEntities(ctx, p.ID)
	if err != nil {
		return err
	}
	valueKey, found := "", false
	for _, e := range es {
		if entityID(p.ID, e.ValueKey) == strings.ToLower(eid) || e.ValueKey == eid {
			valueKey, found = e.ValueKey, true
			break
		}
	}
	if !found {
		return &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "usage-limits policy " + pid + " has no entity " + control.Quote(eid)}
	}
	if _, err := b.counter.ResetUsage(ctx, p.ID, valueKey); err != nil {
		return err
	}
	now := b.now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if err := k.Update(r, id, pid, func(p *Policy) error {
		p.LastResetAt = now
		return nil
	}); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}
