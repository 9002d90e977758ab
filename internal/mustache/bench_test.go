package mustache

import (
	"strings"
	"testing"
)

// benchPrompt is a typical prompt: a JSON array of chat messages of about
// 2 KiB with ten variables, a list and one partial.
var benchPrompt = `[{"role":"system","content":"You are {{assistant_name}}, a support assistant for {{company}}. ` +
	strings.Repeat("Answer politely, cite the knowledge base, and never invent order numbers or prices. ", 20) +
	`{{>policy}}"},` +
	`{"role":"user","content":"Customer: {{customer.name}} ({{customer.tier}} tier, since {{customer.since}}).\n` +
	`Order {{order_id}}, placed {{order_date}}, total {{total}}.\n` +
	`{{#history}}- {{date}}: {{summary}}\n{{/history}}{{^history}}No earlier contact.\n{{/history}}` +
	`Question: {{question}}"}]`

var benchPartials = map[string]string{
	"policy": `Refunds within {{refund_days}} days. ` + strings.Repeat("Escalate legal threats to a human. ", 8),
}

var benchData = map[string]any{
	"assistant_name": "Ada",
	"company":        "Example Corp",
	"customer":       map[string]any{"name": `Jane "JD" Doe`, "tier": "gold", "since": "2019"},
	"order_id":       "A-10023",
	"order_date":     "2025-01-14",
	"total":          129.5,
	"refund_days":    30.0,
	"history": []any{
		map[string]any{"date": "2025-01-02", "summary": "asked about shipping"},
		map[string]any{"date": "2025-01-09", "summary": "reported a damaged box\nsent photos"},
	},
	"question": "Can I return the blender? It arrived broken.",
}

func BenchmarkRender(b *testing.B) {
	tmpl := mustParse(b, benchPrompt, benchPartials)
	if len(benchPrompt)+len(benchPartials["policy"]) < 2048 {
		b.Fatalf("the template and its partial are %d bytes, want 2 KiB or more", len(benchPrompt)+len(benchPartials["policy"]))
	}
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"json-strict", Options{Escape: EscapeJSON, Strict: true}},
		{"html", Options{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tmpl.Render(benchData, bc.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	partials := func(name string) (string, bool) {
		s, ok := benchPartials[name]
		return s, ok
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(benchPrompt, partials); err != nil {
			b.Fatal(err)
		}
	}
}
