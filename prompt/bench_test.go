package prompt_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/prompt"
)

// benchTemplate is a typical prompt: a JSON array of chat messages of
// about 2 KiB with ten variables and one partial.
var benchTemplate = `[{"role":"system","content":"You are {{assistant_name}}, a support assistant for {{company}}. ` +
	strings.Repeat("Answer politely, cite the knowledge base, and never invent order numbers or prices. ", 20) +
	`{{>policy}}"},` +
	`{"role":"user","content":"Customer: {{customer_name}} ({{tier}} tier, since {{since}}).\n` +
	`Order {{order_id}}, placed {{order_date}}, total {{total}}.\nQuestion: {{question}}"}]`

const benchPartial = `Refunds within {{refund_days}} days. Escalate legal threats and chargebacks to a human agent.`

var benchVars = map[string]any{
	"assistant_name": "Ada", "company": "Example Corp", "customer_name": `Jane "JD" Doe`, "tier": "gold",
	"since": "2019", "order_id": "A-10023", "order_date": "2025-01-14", "total": 129.5, "refund_days": 30.0,
	"question": "Can I return the blender?\nIt arrived broken.",
}

// seedStore stores the benchmark's prompt "support" and partial
// "policy" in workspace ws-1 of s.
func seedStore(t testing.TB, s prompt.Store) {
	t.Helper()
	now := time.Now()
	ctx := context.Background()
	for _, r := range []struct {
		kind prompt.Kind
		slug string
		v    prompt.Version
	}{
		{prompt.KindPartial, "policy", prompt.Version{Template: benchPartial}},
		{prompt.KindPrompt, "support", prompt.Version{Template: benchTemplate, Model: "gpt-4o-mini",
			Parameters: json.RawMessage(`{"temperature":0.2,"max_tokens":300}`)}},
	} {
		rec := &prompt.Record{Kind: r.kind, ID: r.slug + "-id", WorkspaceID: "ws-1", Slug: r.slug, Name: r.slug,
			DefaultVersion: 1, LatestVersion: 1, Status: "active", CreatedAt: now, UpdatedAt: now}
		v := r.v
		v.ID, v.RecordID, v.Number, v.CreatedAt = r.slug+"-v1", rec.ID, 1, now
		if err := s.CreateRecord(ctx, rec, &v); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkRender renders a 2 KiB prompt with ten variables and one
// partial into its chat completions body, as POST /prompts/{id}/render
// does once the body is read: the prompt and partial looked up in a
// memstore, the parsed template reused, the output checked as JSON.
func BenchmarkRender(b *testing.B) {
	s := memstore.New()
	seedStore(b, s)
	build := prompt.Builder(s)
	if len(benchTemplate)+len(benchPartial) < 2048 {
		b.Fatalf("the template and its partial are %d bytes, want 2 KiB", len(benchTemplate)+len(benchPartial))
	}
	overrides := map[string]json.RawMessage{"temperature": json.RawMessage(`0.7`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := build(ctx, "ws-1", "support", benchVars, overrides); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBuilderBody(t *testing.T) {
	s := memstore.New()
	seedStore(t, s)
	body, err := prompt.Builder(s)(context.Background(), "ws-1", "support@1", benchVars, map[string]json.RawMessage{"temperature": json.RawMessage(`0.7`)})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Model       string  `json:"model"`
		Temperature float64 `json:"temperature"`
		MaxTokens   int     `json:"max_tokens"`
		Messages    []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if !strings.HasPrefix(string(body), `{"model":"gpt-4o-mini","messages":[`) || got.Temperature != 0.7 || got.MaxTokens != 300 ||
		!strings.Contains(got.Messages[0].Content, "Refunds within 30 days.") ||
		!strings.HasSuffix(got.Messages[1].Content, "Question: Can I return the blender?\nIt arrived broken.") {
		t.Fatalf("body %s", body)
	}
}

// FuzzRender renders the benchmark's prompt with any value of a variable
// and any override: the body is valid JSON holding the value as it was
// given, or the render is a 400 naming a field.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"", `"`, "\\", "\n\t\r", "\x00\x1f", "日本語 🎉", "\u2028", "{{x}}", "\xff\xfe", `</script>`} {
		f.Add(s, `0.5`)
	}
	f.Add("ok", `{"a":[1,"x"]}`)
	f.Add("ok", `nope`)
	s := memstore.New()
	seedStore(f, s)
	build := prompt.Builder(s)
	f.Fuzz(func(t *testing.T, value, override string) {
		vars := map[string]any{}
		for k, v := range benchVars {
			vars[k] = v
		}
		vars["question"] = value
		overrides := map[string]json.RawMessage{}
		if json.Valid([]byte(override)) {
			overrides["temperature"] = json.RawMessage(override)
		}
		body, err := build(context.Background(), "ws-1", "support", vars, overrides)
		if err != nil {
			var ge *gateway.Error
			if !errors.As(err, &ge) || ge.Status != 400 || ge.Param == "" {
				t.Fatalf("%q: %v", value, err)
			}
			return
		}
		var got struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%q rendered invalid JSON: %v", value, err)
		}
		want := string([]rune(value)) // each invalid byte is U+FFFD
		if !strings.HasSuffix(got.Messages[1].Content, "Question: "+want) {
			t.Fatalf("%q came back as %q", value, got.Messages[1].Content)
		}
	})
}

// BenchmarkCompletions is the cost of POST /prompts/{id}/completions
// over the POST /chat/completions it makes, end to end over real HTTP
// against a fake provider: "chat" sends the rendered body itself,
// "prompt" has the gateway render and send it.
func BenchmarkCompletions(b *testing.B) {
	e := newEnv(b)
	seedStore(b, e.store)
	vars := map[string]any{"variables": benchVars}
	body, err := prompt.Builder(e.store)(context.Background(), "ws-1", "support", benchVars, nil)
	if err != nil {
		b.Fatal(err)
	}
	hdr := http.Header{"X-Gateway-Virtual-Key": {"vk"}}
	for _, c := range []struct {
		name, path string
		body       any
	}{
		{"chat", "/chat/completions", string(body)},
		{"prompt", "/prompts/support/completions", vars},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp := e.send(keyAdmin, "POST", c.path, c.body, hdr)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("%s: %d", c.path, resp.StatusCode)
				}
			}
		})
	}
}
