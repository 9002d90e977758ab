package gateway

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPriceLookup(t *testing.T) {
	table := PriceTable{
		"openai/gpt-4o":      {Input: 2.5, Output: 10},
		"openai/gpt-4o-mini": {Input: 0.15, Output: 0.6},
		"gpt-4o-mini-tts":    {Input: 0.6, Output: 12}, // every provider
		"azure-openai/gpt-4": {Input: 30, Output: 60},
		"acme":               {Input: 1, Output: 1},
	}
	tests := []struct {
		provider, model string
		want            string // the entry found; "" for none
	}{
		{"openai", "gpt-4o", "openai/gpt-4o"},
		{"openai", "gpt-4o-2024-08-06", "openai/gpt-4o"},
		{"openai", "gpt-4o-mini-2024-07-18", "openai/gpt-4o-mini"},
		{"openai", "gpt-4o-mini", "openai/gpt-4o-mini"},
		{"openai", "gpt-4o-mini-tts", "gpt-4o-mini-tts"},     // the model alone beats a prefix
		{"openai", "gpt-4o-mini-tts-1", "gpt-4o-mini-tts"},   // the longest prefix, of either form
		{"openai", "gpt-4omni", ""},                          // a prefix must end at a '-'
		{"groq", "gpt-4o", ""},                               // another provider's entry is not used
		{"azure-openai", "gpt-4-0613", "azure-openai/gpt-4"}, //
		{"together-ai", "acme-7b", "acme"},
		{"openai", "", ""},
		{"", "acme", "acme"},
	}
	for _, tt := range tests {
		got, ok := table.Lookup(tt.provider, tt.model)
		want, wantOK := table[tt.want]
		if ok != wantOK || got != want {
			t.Errorf("Lookup(%q, %q) = %v, %v; want entry %q", tt.provider, tt.model, got, ok, tt.want)
		}
	}
}

// TestDefaultPrices: the built-in providers' current model ids, as their
// APIs name them, find the price of their family.
func TestDefaultPrices(t *testing.T) {
	d := DefaultPrices()
	tests := []struct {
		provider, model string
		input, output   float64
	}{
		{"openai", "gpt-4o-2024-11-20", 2.5, 10},
		{"openai", "gpt-4o-2024-05-13", 5, 15},
		{"openai", "gpt-4o-mini-2024-07-18", 0.15, 0.6},
		{"openai", "gpt-4.1-mini-2025-04-14", 0.4, 1.6},
		{"openai", "gpt-4.1-nano", 0.1, 0.4},
		{"openai", "o3-mini-2025-01-31", 1.1, 4.4},
		{"openai", "o4-mini-2025-04-16", 1.1, 4.4},
		{"openai", "o1-2024-12-17", 15, 60},
		{"openai", "text-embedding-3-small", 0.02, 0},
		{"azure-openai", "gpt-4o-mini", 0.15, 0.6},
		{"anthropic", "claude-3-5-sonnet-20241022", 3, 15},
		{"anthropic", "claude-3-5-haiku-latest", 0.8, 4},
		{"anthropic", "claude-3-7-sonnet-20250219", 3, 15},
		{"anthropic", "claude-sonnet-4-20250514", 3, 15},
		{"anthropic", "claude-opus-4-1-20250805", 15, 75},
		{"anthropic", "claude-opus-4-5-20251101", 5, 25},
		{"google", "gemini-2.0-flash-001", 0.1, 0.4},
		{"google", "gemini-2.5-flash-lite", 0.1, 0.4},
		{"google", "models/gemini-2.5-pro", 1.25, 10},
		{"google", "gemini-1.5-flash-002", 0.075, 0.3},
		{"vertex-ai", "gemini-2.5-flash", 0.3, 2.5},
		{"vertex-ai", "google/gemini-2.0-flash-001", 0.1, 0.4},
		{"vertex-ai", "claude-3-5-sonnet-v2@20241022", 3, 15},
		{"bedrock", "anthropic.claude-3-5-sonnet-20241022-v2:0", 3, 15},
		{"bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", 3, 15},
		{"bedrock", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0", 3, 15},
		{"bedrock", "amazon.titan-text-express-v1", 0.2, 0.6},
		{"bedrock", "amazon.titan-embed-text-v2:0", 0.02, 0},
		{"bedrock", "amazon.titan-embed-text-v1", 0.1, 0},
		{"bedrock", "cohere.command-r-plus-v1:0", 3, 15},
		{"bedrock", "cohere.command-r-v1:0", 0.5, 1.5},
		{"bedrock", "cohere.embed-english-v3", 0.1, 0},
	}
	for _, tt := range tests {
		p, ok := d.Lookup(tt.provider, tt.model)
		if !ok || p.Input != tt.input || p.Output != tt.output {
			t.Errorf("%s/%s: %+v, %v; want input %v output %v", tt.provider, tt.model, p, ok, tt.input, tt.output)
		}
	}
	for k, p := range d {
		if p.Input < 0 || p.Output < 0 || p.CachedInput < 0 || p.CachedInput > p.Input || !strings.Contains(k, "/") {
			t.Errorf("entry %q = %+v", k, p)
		}
	}
	d["openai/gpt-4o"] = ModelPrice{}
	if p, _ := DefaultPrices().Lookup("openai", "gpt-4o"); p.Input != 2.5 {
		t.Error("DefaultPrices returned a table shared with an earlier caller")
	}
}

func TestPriceCost(t *testing.T) {
	table := PriceTable{"openai/gpt-4o": {Input: 2.5, Output: 10, CachedInput: 1.25}, "m": {Input: 2, Output: 4}}
	tests := []struct {
		provider, model            string
		prompt, completion, cached int64
		want                       float64
		known                      bool
	}{
		{"openai", "gpt-4o", 1_000_000, 1_000_000, 0, 12.5, true},
		{"openai", "gpt-4o", 1_000_000, 0, 400_000, 0.6*2.5 + 0.4*1.25, true},
		{"x", "m", 1_000_000, 0, 500_000, 2, true},   // no cached price: cached tokens cost input
		{"x", "m", 100, 0, 500, 100 * 2 / 1e6, true}, // more cached than prompt tokens: all of them
		{"x", "m", -5, -5, -5, 0, true},              // nonsense counts cost nothing
		{"openai", "gpt-5-turbo-max", 1000, 1000, 0, 0, false},
	}
	for _, tt := range tests {
		got, known := table.Cost(tt.provider, tt.model, tt.prompt, tt.completion, tt.cached)
		if math.Abs(got-tt.want) > 1e-12 || known != tt.known {
			t.Errorf("Cost(%s, %s, %d, %d, %d) = %v, %v; want %v, %v", tt.provider, tt.model, tt.prompt, tt.completion, tt.cached, got, known, tt.want, tt.known)
		}
	}
	d := DefaultPrices()
	if n := testing.AllocsPerRun(100, func() { d.Cost("bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", 10, 10, 0) }); n != 0 {
		t.Errorf("Cost allocates %v times, want 0", n)
	}
}

func TestParsePrices(t *testing.T) {
	got, err := ParsePrices(strings.NewReader(`{
		"openai/gpt-4o": {"input": 2.5, "output": 10, "cached_input": 1.25},
		"my-model": {"input": 0.1},
		"free": {}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := PriceTable{"openai/gpt-4o": {2.5, 10, 1.25}, "my-model": {Input: 0.1}, "free": {}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}
	for in, wantErr := range map[string]string{
		``:                                    "unexpected EOF",
		`[]`:                                  "the price table must be a JSON object",
		`{"a": 1}`:                            `"a" must be a JSON object`,
		`{"": {}}`:                            "an entry has an empty name",
		`{"a": {}, "a": {}}`:                  `"a": named twice`,
		`{"a": {"input": -1}}`:                `"a": input -1 is negative`,
		`{"a": {"output": 1e999}}`:            `"a": output 1e999 is out of range`,
		`{"a": {"cached_input": "1"}}`:        `"a": cached_input must be a number`,
		`{"a": {"input": null}}`:              `"a": input must be a number`,
		`{"a": {"input": 1, "input": 2}}`:     `"a": field "input" given twice`,
		`{"a": {"inputs": 1}}`:                `"a": unknown field "inputs"`,
		`{"a": {"input": [1]}}`:               `"a": input must be a number`,
		`{"a": {}} {}`:                        "data after the price table",
		`{"a": {"input": 1}`:                  "unexpected EOF",
		`{"openai/gpt-4o": {"output": -0.5}}`: `"openai/gpt-4o": output -0.5 is negative`,
	} {
		_, err := ParsePrices(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.HasPrefix(err.Error(), "gateway: prices: ") {
			t.Errorf("ParsePrices(%s) = %v, want an error saying %q", in, err, wantErr)
		}
	}
}

func FuzzParsePrices(f *testing.F) {
	f.Add(`{"openai/gpt-4o": {"input": 2.5, "output": 10, "cached_input": 1.25}}`)
	f.Add(`{"a": {"input": -0}, "b": {"output": 1e308}}`)
	f.Add(`{"a": {"input": 1e-320}}`)
	f.Fuzz(func(t *testing.T, in string) {
		table, err := ParsePrices(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "gateway: prices: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
			return
		}
		for k, p := range table {
			for _, v := range []float64{p.Input, p.Output, p.CachedInput} {
				if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
					t.Fatalf("entry %q has the price %v", k, v)
				}
			}
		}
		// What was read writes back to the same table.
		b, err := json.Marshal(table)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParsePrices(strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if d := cmp.Diff(table, again); d != "" {
			t.Fatalf("round trip (-first +second):\n%s", d)
		}
	})
}
