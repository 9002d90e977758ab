package guardrail_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelgateway/gateway/guardrail"
)

// A host registers a check of its own beside the built-ins, compiles a
// guardrail a tenant defined, and runs it on a chat completions request,
// writing the redacted text back into the body.
func Example() {
	reg := guardrail.NewRegistry(guardrail.Env{})
	reg.Register("acme.noTicketIDs", func(params json.RawMessage) (guardrail.Check, error) {
		var p struct {
			Prefix string `json:"prefix"`
		}
		if err := guardrail.DecodeParameters(params, &p); err != nil {
			return nil, err
		}
		return guardrail.CheckFunc(func(_ context.Context, in *guardrail.Input) (guardrail.Verdict, error) {
			if strings.Contains(in.Text, p.Prefix) {
				return guardrail.Verdict{Explanation: "The text names a ticket."}, nil
			}
			return guardrail.Verdict{Pass: true, Explanation: "No ticket named."}, nil
		}), nil
	})

	g, err := reg.Compile(guardrail.Definition{
		ID:   "pg-input",
		Deny: true,
		Checks: []guardrail.CheckDefinition{
			{ID: "acme.noTicketIDs", Parameters: json.RawMessage(`{"prefix":"TCK-"}`)},
			{ID: "default.pii", Parameters: json.RawMessage(`{"categories":["EMAIL_ADDRESS"],"redact":true}`)},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"Write to ops@example.com"}]}`)
	texts, err := guardrail.RequestTexts(body)
	if err != nil {
		fmt.Println(err)
		return
	}
	out := guardrail.Run(context.Background(), &guardrail.Input{Phase: guardrail.BeforeRequest, Parts: texts.Parts, Model: "gpt-4o"}, g)
	for _, c := range out.Results[0].Checks {
		fmt.Println(c.ID, c.Verdict, c.Explanation)
	}
	fmt.Println("denied:", out.Denied())
	if out.Transformed {
		body, _ = texts.Replace(out.Parts)
	}
	fmt.Println(string(body))

	_, err = reg.Compile(guardrail.Definition{Checks: []guardrail.CheckDefinition{{ID: "azure.contentSafety"}}})
	fmt.Println(err)
	// Output:
	// acme.noTicketIDs true No ticket named.
	// default.pii true Redacted 1 EMAIL_ADDRESS.
	// denied: false
	// {"model":"gpt-4o","messages":[{"role":"user","content":"Write to [EMAIL_ADDRESS]"}]}
	// guardrail: checks[0].id: check "azure.contentSafety" is not supported
}
