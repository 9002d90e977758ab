package sqlstore

import (
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
)

// promptWhere returns the condition selecting the records of
// q.Prompts (observe.Query.Prompts): those whose metadata names one of
// them as the prompt's slug or id; "" when q names no prompt.
func promptWhere(d dialect, q *observe.Query, arg func(any) string) string {
	if len(q.Prompts) == 0 {
		return ""
	}
	var ors []string
	for _, k := range []string{gateway.MetadataPrompt, observe.MetadataPromptID} {
		expr := metadataValue(d, k, arg)
		marks := make([]string, len(q.Prompts))
		for i, p := range q.Prompts {
			marks[i] = arg(p)
		}
		ors = append(ors, expr+` IN (`+strings.Join(marks, ", ")+`)`)
	}
	return `(` + strings.Join(ors, ` OR `) + `)`
}
