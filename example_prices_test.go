package gateway_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/modelgateway/gateway"
)

// A host prices the models it serves with a table of its own, read from a
// JSON file, on top of the built-in prices; every request's log record
// then carries its cost.
func ExampleParsePrices() {
	own, err := gateway.ParsePrices(strings.NewReader(`{
		"openai/gpt-4o": {"input": 2.00, "output": 8.00, "cached_input": 1.00},
		"acme-llm":      {"input": 0.10, "output": 0.20}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	prices := gateway.DefaultPrices()
	for k, p := range own {
		prices[k] = p
	}
	g := gateway.New(gateway.Options{Prices: prices /* , Keys, LogSink, … */})
	defer g.Close()

	// Dated model ids find the price of their family.
	usd, known := prices.Cost("openai", "gpt-4o-2024-08-06", 1_000_000, 100_000, 400_000)
	fmt.Printf("gpt-4o: $%.2f %v\n", usd, known)
	usd, known = prices.Cost("together-ai", "acme-llm-70b", 2_000_000, 1_000_000, 0)
	fmt.Printf("acme-llm at any provider: $%.2f %v\n", usd, known)
	usd, known = prices.Cost("anthropic", "claude-3-5-haiku-20241022", 1_000_000, 1_000_000, 0)
	fmt.Printf("built in: $%.2f %v\n", usd, known)
	usd, known = prices.Cost("groq", "unpriced-model", 1_000, 1_000, 0)
	fmt.Printf("unknown: $%.2f %v\n", usd, known)
	// Output:
	// gpt-4o: $2.40 true
	// acme-llm at any provider: $0.40 true
	// built in: $4.80 true
	// unknown: $0.00 false
}
