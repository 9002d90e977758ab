package guardrail

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// message4K is a 4 KiB user message with a little personal data in it.
var message4K = func() string {
	pii := " Contact jane.doe@example.com or +44 20 7946 0958, card 4111 1111 1111 1111, from 192.168.1.20."
	filler := strings.Repeat("The quarterly report covers revenue, costs and the outlook for 2025; see section 4.2 for details. ", 50)
	return filler[:4096-len(pii)] + pii
}()

func BenchmarkScanPII4K(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(message4K)))
	for b.Loop() {
		if fs := scanPII(message4K, allPII); len(fs) != 4 {
			b.Fatalf("%d findings", len(fs))
		}
	}
}

func BenchmarkRegexMatch4K(b *testing.B) {
	c, err := NewRegistry(Env{}).New("default.regexMatch", json.RawMessage(`{"rule":"\\b(inappropriate|banned|harmful|offensive)\\b","not":true}`))
	if err != nil {
		b.Fatal(err)
	}
	in := &Input{Parts: []string{message4K}, Text: message4K}
	b.ReportAllocs()
	b.SetBytes(int64(len(message4K)))
	for b.Loop() {
		if v, _ := c.Check(context.Background(), in); !v.Pass {
			b.Fatal(v.Explanation)
		}
	}
}

// BenchmarkInputGuardrail4K is a typical input guardrail, a regex and PII
// redaction, run by the engine over a 4 KiB prompt, with the body read
// and written back.
func BenchmarkInputGuardrail4K(b *testing.B) {
	g, err := NewRegistry(Env{}).Compile(Definition{ID: "g", Deny: true, Checks: []CheckDefinition{
		{ID: "default.regexMatch", Parameters: json.RawMessage(`{"rule":"\\b(inappropriate|banned|harmful|offensive)\\b","not":true}`)},
		{ID: "default.pii", Parameters: json.RawMessage(`{"categories":["EMAIL_ADDRESS","PHONE_NUMBER","CREDIT_CARD","IBAN_CODE","SSN","IP_ADDRESS"],"redact":true}`)},
	}})
	if err != nil {
		b.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": message4K}}})
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		texts, err := RequestTexts(body)
		if err != nil {
			b.Fatal(err)
		}
		out := Run(context.Background(), &Input{Phase: BeforeRequest, Parts: texts.Parts}, g)
		if out.Denied() || !out.Transformed {
			b.Fatalf("%+v", out)
		}
		if _, err := texts.Replace(out.Parts); err != nil {
			b.Fatal(err)
		}
	}
}

func TestScanPIILinear(t *testing.T) {
	// Inputs built to make a careless scanner quadratic finish at once.
	for _, s := range []string{strings.Repeat("a@", 1<<16), strings.Repeat("1 ", 1<<16), strings.Repeat("1.", 1<<16),
		strings.Repeat("a:", 1<<16), strings.Repeat("DE89 ", 1<<16), strings.Repeat("{", 1<<16), strings.Repeat("x.", 1<<16) + "@"} {
		scanPII(s, allPII)
		extractJSON(s)
		findURLs(strings.Repeat("http://", 1<<14))
	}
}
