package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// ModelPrice is the list price of a model in USD per 1M tokens: Input
// for prompt tokens, Output for completion tokens, CachedInput for the
// prompt tokens the provider read from its prompt cache (zero means they
// are priced as Input).
type ModelPrice struct {
	Input       float64 `json:"input"`
	Output      float64 `json:"output"`
	CachedInput float64 `json:"cached_input,omitempty"`
}

// PriceTable prices models, keyed "provider/model" with the provider
// kind's slug (openai, anthropic, azure-openai, google, vertex-ai,
// bedrock, …), or by the model alone for a price that holds at every
// provider. A model is looked up as Lookup says. A PriceTable is read
// concurrently by the gateway and must not be changed while in use; New
// keeps a copy of Options.Prices.
type PriceTable map[string]ModelPrice

// Cost returns the price in USD of a request to model at provider that
// used prompt and completion tokens, cachedPrompt of the prompt tokens
// read from the provider's prompt cache, and whether the table prices the
// model. A model it does not price costs 0.
func (t PriceTable) Cost(provider, model string, prompt, completion, cachedPrompt int64) (usd float64, known bool) {
	p, ok := t.Lookup(provider, model)
	if !ok {
		return 0, false
	}
	return p.cost(prompt, completion, cachedPrompt), true
}

func (p ModelPrice) cost(prompt, completion, cached int64) float64 {
	prompt, completion = max(prompt, 0), max(completion, 0)
	cached = min(max(cached, 0), prompt)
	in := p.CachedInput
	if in == 0 {
		in = p.Input
	}
	return (float64(prompt-cached)*p.Input + float64(cached)*in + float64(completion)*p.Output) / 1e6
}

// maxPriceKey bounds the keys Lookup builds on the stack; a longer one is
// built on the heap.
const maxPriceKey = 128

// Lookup returns the price of model at provider: the entry
// "provider/model", else the entry of the model alone, else the entry
// that is the longest prefix of either ending where the model has a '-'
// (or the '@' of a Vertex AI version, the ':' of a Bedrock one): so
// "gpt-4o-2024-08-06" finds "gpt-4o", "gpt-4o-mini-2024-07-18" finds
// "gpt-4o-mini" rather than "gpt-4o", "claude-3-5-sonnet-v2@20241022"
// finds "claude-3-5-sonnet", and "amazon.titan-embed-text-v2:0" finds
// "amazon.titan-embed-text-v2". When none
// matches, a model named by a path (a Bedrock ARN, "google/gemini-…") is
// looked up again by its last segment, and a Bedrock inference profile
// ("us.anthropic.claude-…") without its geography.
func (t PriceTable) Lookup(provider, model string) (ModelPrice, bool) {
	if len(t) == 0 || model == "" {
		return ModelPrice{}, false
	}
	if p, ok := t.find(provider, model); ok {
		return p, true
	}
	if i := strings.LastIndexByte(model, '/'); i >= 0 && i < len(model)-1 {
		model = model[i+1:]
		if p, ok := t.find(provider, model); ok {
			return p, true
		}
	}
	if geo, rest, ok := strings.Cut(model, "."); ok && inferenceGeography(geo) {
		return t.find(provider, rest)
	}
	return ModelPrice{}, false
}

// inferenceGeography reports whether s is the geography that prefixes a
// Bedrock cross-region inference profile id.
func inferenceGeography(s string) bool {
	switch s {
	case "us", "eu", "apac", "ap", "jp", "au", "ca", "us-gov", "global":
		return true
	}
	return false
}

// find looks model up as Lookup says, without retrying other forms of it.
// The keys are built in a buffer on the stack, and map lookups by
// string(bytes) do not allocate: pricing a request costs no allocation.
func (t PriceTable) find(provider, model string) (ModelPrice, bool) {
	var buf [maxPriceKey]byte
	k := append(append(append(buf[:0], provider...), '/'), model...)
	pre := len(provider) + 1 // the model's offset in k
	if p, ok := t[string(k)]; ok {
		return p, true
	}
	if p, ok := t[model]; ok {
		return p, true
	}
	for n := len(model) - 1; n > 0; n-- {
		if c := model[n]; c != '-' && c != '@' && c != ':' {
			continue
		}
		if p, ok := t[string(k[:pre+n])]; ok {
			return p, true
		}
		if p, ok := t[model[:n]]; ok {
			return p, true
		}
	}
	return ModelPrice{}, false
}

// ParsePrices reads a price table written as a JSON object:
//
//	{"openai/gpt-4o": {"input": 2.5, "output": 10, "cached_input": 1.25},
//	 "my-model": {"input": 0.1, "output": 0.2}}
//
// keyed as PriceTable is, prices in USD per 1M tokens, each field
// optional (zero when absent). An entry named twice, an empty name, a
// field it does not know, and a price that is negative, not a number or
// out of float64's range are errors that name the entry and the field.
func ParsePrices(r io.Reader) (PriceTable, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := expectDelim(dec, '{', "the price table"); err != nil {
		return nil, err
	}
	t := PriceTable{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, priceSyntax(err)
		}
		name := tok.(string) // json.Decoder yields only strings as object keys
		if name == "" {
			return nil, errors.New("gateway: prices: an entry has an empty name")
		}
		if _, dup := t[name]; dup {
			return nil, fmt.Errorf("gateway: prices: %q: named twice", name)
		}
		p, err := parsePrice(dec, name)
		if err != nil {
			return nil, err
		}
		t[name] = p
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, priceSyntax(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("gateway: prices: data after the price table")
	}
	return t, nil
}

// parsePrice reads the object of the entry name.
func parsePrice(dec *json.Decoder, name string) (ModelPrice, error) {
	var p ModelPrice
	if err := expectDelim(dec, '{', fmt.Sprintf("%q", name)); err != nil {
		return p, err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return p, priceSyntax(err)
		}
		field := tok.(string)
		var dst *float64
		switch field {
		case "input":
			dst = &p.Input
		case "output":
			dst = &p.Output
		case "cached_input":
			dst = &p.CachedInput
		default:
			return p, fmt.Errorf("gateway: prices: %q: unknown field %q (want input, output, cached_input)", name, field)
		}
		if seen[field] {
			return p, fmt.Errorf("gateway: prices: %q: field %q given twice", name, field)
		}
		seen[field] = true
		tok, err = dec.Token()
		if err != nil {
			return p, priceSyntax(err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return p, fmt.Errorf("gateway: prices: %q: %s must be a number of USD per 1M tokens", name, field)
		}
		v, err := num.Float64()
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return p, fmt.Errorf("gateway: prices: %q: %s %s is out of range", name, field, num)
		}
		if v < 0 {
			return p, fmt.Errorf("gateway: prices: %q: %s %s is negative", name, field, num)
		}
		*dst = v
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return p, priceSyntax(err)
	}
	return p, nil
}

// expectDelim reads the next token, which must be the delimiter d opening
// what.
func expectDelim(dec *json.Decoder, d json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return priceSyntax(err)
	}
	if tok != d {
		return fmt.Errorf("gateway: prices: %s must be a JSON object", what)
	}
	return nil
}

func priceSyntax(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("gateway: prices: %w", err)
}

// DefaultPrices returns a new copy of the price table the gateway uses
// when Options.Prices is nil: the public list prices (standard tier,
// pay-as-you-go, prompts within the base context tier; no batch or
// regional discounts, no long-context surcharges) of the built-in
// providers' current models. Azure OpenAI's global deployments are priced
// as OpenAI's models, Vertex AI's Gemini models as the Gemini API's.
//
// The prices are as of November 2026: OpenAI's, Anthropic's and Google's
// as their pricing pages, and secondary sources quoting them, gave them
// then; Bedrock's are AWS's on-demand list prices in us-east-1 as last
// seen in 2025, not checked again. Prices change: a deployment that bills
// on them should keep its own table (see ParsePrices).
func DefaultPrices() PriceTable {
	t := make(PriceTable, 3*len(defaultPrices))
	for _, e := range defaultPrices {
		t[e.key] = e.price
		if provider, model, _ := strings.Cut(e.key, "/"); provider == ProviderOpenAI {
			t[ProviderAzureOpenAI+"/"+model] = e.price
		} else if provider == ProviderGoogle {
			t[ProviderVertexAI+"/"+model] = e.price
		}
	}
	return t
}

// defaultPrices is DefaultPrices' table, USD per 1M tokens: input,
// output, cached input (0: as input).
var defaultPrices = []struct {
	key   string
	price ModelPrice
}{
	// OpenAI (openai.com/api/pricing, as of November 2026).
	{"openai/gpt-5", ModelPrice{1.25, 10, 0.125}},
	{"openai/gpt-5-mini", ModelPrice{0.25, 2, 0.025}},
	{"openai/gpt-5-nano", ModelPrice{0.05, 0.40, 0.005}},
	{"openai/gpt-4.1", ModelPrice{2, 8, 0.50}},
	{"openai/gpt-4.1-mini", ModelPrice{0.40, 1.60, 0.10}},
	{"openai/gpt-4.1-nano", ModelPrice{0.10, 0.40, 0.025}},
	{"openai/gpt-4o", ModelPrice{2.50, 10, 1.25}},
	{"openai/gpt-4o-2024-05-13", ModelPrice{5, 15, 0}},
	{"openai/gpt-4o-mini", ModelPrice{0.15, 0.60, 0.075}},
	{"openai/gpt-4o-realtime-preview", ModelPrice{5, 20, 2.50}},
	{"openai/gpt-4o-mini-realtime-preview", ModelPrice{0.60, 2.40, 0.30}},
	{"openai/chatgpt-4o-latest", ModelPrice{5, 15, 0}},
	{"openai/gpt-4-turbo", ModelPrice{10, 30, 0}},
	{"openai/gpt-4", ModelPrice{30, 60, 0}},
	{"openai/gpt-3.5-turbo", ModelPrice{0.50, 1.50, 0}},
	{"openai/o1", ModelPrice{15, 60, 7.50}},
	{"openai/o1-mini", ModelPrice{1.10, 4.40, 0.55}},
	{"openai/o1-pro", ModelPrice{150, 600, 0}},
	{"openai/o3", ModelPrice{2, 8, 0.50}},
	{"openai/o3-mini", ModelPrice{1.10, 4.40, 0.55}},
	{"openai/o3-pro", ModelPrice{20, 80, 0}},
	{"openai/o4-mini", ModelPrice{1.10, 4.40, 0.275}},
	{"openai/text-embedding-3-small", ModelPrice{0.02, 0, 0}},
	{"openai/text-embedding-3-large", ModelPrice{0.13, 0, 0}},
	{"openai/text-embedding-ada-002", ModelPrice{0.10, 0, 0}},

	// Anthropic (docs.anthropic.com pricing; the 4.5 and 4.6 models
	// from secondary sources, as of November 2026); cached input is a
	// cache hit. Cache writes are priced as input, below Anthropic's 1.25x.
	{"anthropic/claude-opus-4-6", ModelPrice{5, 25, 0.50}},
	{"anthropic/claude-opus-4-5", ModelPrice{5, 25, 0.50}},
	{"anthropic/claude-opus-4-1", ModelPrice{15, 75, 1.50}},
	{"anthropic/claude-opus-4", ModelPrice{15, 75, 1.50}},
	{"anthropic/claude-sonnet-4-6", ModelPrice{3, 15, 0.30}},
	{"anthropic/claude-sonnet-4-5", ModelPrice{3, 15, 0.30}},
	{"anthropic/claude-sonnet-4", ModelPrice{3, 15, 0.30}},
	{"anthropic/claude-haiku-4-5", ModelPrice{1, 5, 0.10}},
	{"anthropic/claude-3-7-sonnet", ModelPrice{3, 15, 0.30}},
	{"anthropic/claude-3-5-sonnet", ModelPrice{3, 15, 0.30}},
	{"anthropic/claude-3-5-haiku", ModelPrice{0.80, 4, 0.08}},
	{"anthropic/claude-3-opus", ModelPrice{15, 75, 1.50}},
	{"anthropic/claude-3-haiku", ModelPrice{0.25, 1.25, 0.03}},

	// Gemini API (ai.google.dev pricing, as of November 2026), prompts up to
	// 200K tokens (128K for 1.5); cached input is context caching.
	{"google/gemini-2.5-pro", ModelPrice{1.25, 10, 0.125}},
	{"google/gemini-2.5-flash", ModelPrice{0.30, 2.50, 0.03}},
	{"google/gemini-2.5-flash-lite", ModelPrice{0.10, 0.40, 0.01}},
	{"google/gemini-2.0-flash", ModelPrice{0.10, 0.40, 0.025}},
	{"google/gemini-2.0-flash-lite", ModelPrice{0.075, 0.30, 0}},
	{"google/gemini-1.5-pro", ModelPrice{1.25, 5, 0.3125}},
	{"google/gemini-1.5-flash", ModelPrice{0.075, 0.30, 0.01875}},
	{"google/gemini-1.5-flash-8b", ModelPrice{0.0375, 0.15, 0.01}},
	{"google/text-embedding-004", ModelPrice{0, 0, 0}},
	{"google/gemini-embedding-001", ModelPrice{0.15, 0, 0}},

	// Vertex AI's Claude models, named with an @version.
	{"vertex-ai/claude-opus-4-1", ModelPrice{15, 75, 1.50}},
	{"vertex-ai/claude-opus-4", ModelPrice{15, 75, 1.50}},
	{"vertex-ai/claude-sonnet-4", ModelPrice{3, 15, 0.30}},
	{"vertex-ai/claude-3-7-sonnet", ModelPrice{3, 15, 0.30}},
	{"vertex-ai/claude-3-5-sonnet", ModelPrice{3, 15, 0.30}},
	{"vertex-ai/claude-3-5-haiku", ModelPrice{0.80, 4, 0.08}},

	// Amazon Bedrock, on-demand in us-east-1 (aws.amazon.com/bedrock/
	// pricing, as of 2025); model ids as Bedrock names them, inference profiles
	// ("us.anthropic.…") found without their geography.
	{"bedrock/anthropic.claude-opus-4-1", ModelPrice{15, 75, 1.50}},
	{"bedrock/anthropic.claude-opus-4", ModelPrice{15, 75, 1.50}},
	{"bedrock/anthropic.claude-sonnet-4-5", ModelPrice{3, 15, 0.30}},
	{"bedrock/anthropic.claude-sonnet-4", ModelPrice{3, 15, 0.30}},
	{"bedrock/anthropic.claude-haiku-4-5", ModelPrice{1, 5, 0.10}},
	{"bedrock/anthropic.claude-3-7-sonnet", ModelPrice{3, 15, 0.30}},
	{"bedrock/anthropic.claude-3-5-sonnet", ModelPrice{3, 15, 0.30}},
	{"bedrock/anthropic.claude-3-5-haiku", ModelPrice{0.80, 4, 0.08}},
	{"bedrock/anthropic.claude-3-opus", ModelPrice{15, 75, 0}},
	{"bedrock/anthropic.claude-3-haiku", ModelPrice{0.25, 1.25, 0}},
	{"bedrock/amazon.nova-pro", ModelPrice{0.80, 3.20, 0.20}},
	{"bedrock/amazon.nova-lite", ModelPrice{0.06, 0.24, 0.015}},
	{"bedrock/amazon.nova-micro", ModelPrice{0.035, 0.14, 0.00875}},
	{"bedrock/amazon.titan-text-premier", ModelPrice{0.50, 1.50, 0}},
	{"bedrock/amazon.titan-text-express", ModelPrice{0.20, 0.60, 0}},
	{"bedrock/amazon.titan-text-lite", ModelPrice{0.15, 0.20, 0}},
	{"bedrock/amazon.titan-embed-text-v2", ModelPrice{0.02, 0, 0}},
	{"bedrock/amazon.titan-embed-text", ModelPrice{0.10, 0, 0}},
	{"bedrock/cohere.command-r-plus", ModelPrice{3, 15, 0}},
	{"bedrock/cohere.command-r", ModelPrice{0.50, 1.50, 0}},
	{"bedrock/cohere.embed-english", ModelPrice{0.10, 0, 0}},
	{"bedrock/cohere.embed-multilingual", ModelPrice{0.10, 0, 0}},
}
