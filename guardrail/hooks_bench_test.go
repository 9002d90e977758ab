package guardrail_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/guardrail"
)

// benchPrompt is a 4 KiB prompt with an email address and a card number
// in it.
func benchPrompt() string {
	var b strings.Builder
	for b.Len() < 4000 {
		b.WriteString("The quarterly report covers revenue, costs and the outlook for the next year. ")
	}
	b.WriteString("Reach me at jane.doe@example.com or pay with 4111 1111 1111 1111.")
	return b.String()
}

// BenchmarkBeforeRegexPII is the input phase of a request through a
// typical guardrail: a regular expression and PII redaction over a 4 KiB
// prompt, the body rewritten.
func BenchmarkBeforeRegexPII(b *testing.B) {
	h := &guardrail.Hooks{}
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []map[string]string{{"role": "user", "content": benchPrompt()}}})
	ref := gateway.HookRef{Param: gateway.HeaderConfig, Path: "input_guardrails[0]", Guardrail: json.RawMessage(`{"checks":[
		{"id":"default.regexMatch","parameters":{"rule":"\\bpassword\\b","not":true}},
		{"id":"default.pii","parameters":{"redact":true,"categories":["EMAIL_ADDRESS","CREDIT_CARD","PHONE_NUMBER"]}}],"actions":{"deny":true}}`)}
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	cpu := cpuPerOp(b)
	for b.Loop() {
		c := &gateway.HookCall{Input: []gateway.HookRef{ref}, Body: body}
		if err := h.Before(r, c); err != nil || c.Denied || !strings.Contains(string(c.Body), "[EMAIL_ADDRESS]") {
			b.Fatalf("%v %v %s", err, c.Denied, c.BeforeResults)
		}
	}
	_ = cpu
}

// BenchmarkAfterStream50 is the output phase of a streamed answer of 50
// events through a guardrail of a regular expression and a word count;
// ns/event is the cost per event.
func BenchmarkAfterStream50(b *testing.B) {
	h := &guardrail.Hooks{}
	var events strings.Builder
	for i := range 50 {
		fmt.Fprintf(&events, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"finish_reason\":null}]}\n\n", i)
	}
	events.WriteString("data: [DONE]\n\n")
	stream := []byte(events.String())
	ref := gateway.HookRef{Param: gateway.HeaderConfig, Path: "output_guardrails[0]", Guardrail: json.RawMessage(`{"checks":[
		{"id":"default.regexMatch","parameters":{"rule":"forbidden","not":true}},
		{"id":"default.wordCount","parameters":{"minWords":1,"maxWords":1000}}],"actions":{"deny":true}}`)}
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	b.ReportAllocs()
	cpu := cpuPerOp(b)
	for b.Loop() {
		c := &gateway.HookCall{Output: []gateway.HookRef{ref}, Body: stream, Stream: true}
		if err := h.After(r, c); err != nil || c.Denied || c.Failed {
			b.Fatalf("%v %v %s", err, c.Denied, c.AfterResults)
		}
	}
	b.ReportMetric(cpu()/50, "cpu-ns/event")
}

// cpuPerOp returns a function giving the CPU time the process spent per
// operation since the call, and reports it as cpu-ns/op when b ends: on
// a machine shared with other work, ns/op also counts the time others
// held the CPU.
func cpuPerOp(b *testing.B) func() float64 {
	used := func() int64 {
		var u syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &u)
		return u.Utime.Nano() + u.Stime.Nano()
	}
	start := used()
	per := func() float64 { return float64(used()-start) / float64(max(b.N, 1)) }
	b.Cleanup(func() { b.ReportMetric(per(), "cpu-ns/op") })
	return per
}
