package gatewaytest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelgateway/gateway/gatewaytest"
)

// A test points its client (or a gateway virtual key's base URL) at the fake
// provider, scripts a rate-limit answer, and checks what arrived.
func Example() {
	s := gatewaytest.NewServer()
	defer s.Close()
	s.RequireToken("sk-test")
	s.Script("/v1/completions", gatewaytest.Response{
		Status: http.StatusTooManyRequests,
		Header: http.Header{"Retry-After": {"1"}},
	})

	complete := func() {
		req, _ := http.NewRequest("POST", s.URL+"/completions",
			strings.NewReader(`{"model":"gpt-3.5-turbo-instruct","prompt":"Say hi"}`))
		req.Header.Set("Authorization", "Bearer sk-test")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		fmt.Println(res.StatusCode, res.Header.Get("Retry-After"), strings.TrimSpace(string(body)))
	}
	complete() // scripted
	complete() // normal behaviour

	fmt.Println(s.Count("/v1/completions"), "requests; first had", s.Requests()[0].Header.Get("Authorization"))
	// Output:
	// 429 1 {"error":{"message":"Rate limit reached. Please try again later.","type":"requests","param":null,"code":"rate_limit_exceeded"}}
	// 200  {"id":"cmpl-000001","object":"text_completion","created":1700000000,"model":"gpt-3.5-turbo-instruct","system_fingerprint":"fp_gatewaytest","choices":[{"text":"Echo: Say hi","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}
	// 2 requests; first had Bearer sk-test
}

// A stream gate holds a stream after its first event, so a test can show
// that the event reached the client before the rest was written.
func ExampleServer_HoldStream() {
	s := gatewaytest.NewServer()
	defer s.Close()
	gate := s.HoldStream("/v1/chat/completions", 1)

	res, err := http.Post(s.URL+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"stream":true}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	r := bufio.NewReader(res.Body)
	first, _ := r.ReadString('\n')
	<-gate.Held() // the server is waiting; the first event has already arrived
	fmt.Println("before release:", strings.HasPrefix(first, `data: {"id":"chatcmpl-000001"`))
	gate.Release()

	var text strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		json.Unmarshal([]byte(data), &chunk)
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	fmt.Println("after release:", text.String())
	// Output:
	// before release: true
	// after release: Echo: hi
}

// SetJobStatus drives a fine-tuning job through its states; each state fills
// the fields the state rules require.
func ExampleServer_SetJobStatus() {
	s := gatewaytest.NewServer()
	defer s.Close()
	job := s.AddJob(gatewaytest.FineTuningJob{Model: "gpt-4o-mini", TrainingFile: "file-abc"})
	for _, status := range []string{"queued", "running", "succeeded"} {
		if err := s.SetJobStatus(job.ID, status); err != nil {
			fmt.Println(err)
		}
		j, _ := s.Job(job.ID)
		fmt.Println(j.Status, j.FineTunedModel != nil, j.EstimatedFinish != nil, j.ResultFiles)
	}
	fmt.Println(s.SetJobStatus(job.ID, "running"))
	// Output:
	// queued false false []
	// running false true []
	// succeeded true false [file-000001]
	// gatewaytest: fine-tuning job "ftjob-000001" cannot go from succeeded to running
}

// An agent loop tested offline: the fake speaks Anthropic Messages, calls the
// tool the user names, and answers the tool's result. The same loop works
// against POST /v1/responses with function_call items and
// previous_response_id.
func ExampleServer_messages() {
	s := gatewaytest.NewServer()
	defer s.Close()
	s.RequireToken("sk-ant-test")

	type block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   string          `json:"content,omitempty"`
	}
	type message struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	tools := json.RawMessage(`[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`)
	messages := []message{{Role: "user", Content: []block{{Type: "text", Text: "Is it warm? Ask get_weather."}}}}
	for {
		body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": tools, "messages": messages})
		req, _ := http.NewRequest("POST", s.URL+"/messages", bytes.NewReader(body))
		req.Header.Set("x-api-key", "sk-ant-test")
		req.Header.Set("anthropic-version", "2023-06-01")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		var answer struct {
			Content    []block `json:"content"`
			StopReason string  `json:"stop_reason"`
		}
		json.NewDecoder(res.Body).Decode(&answer)
		res.Body.Close()
		messages = append(messages, message{Role: "assistant", Content: answer.Content})
		var results []block
		for _, b := range answer.Content {
			switch b.Type {
			case "text":
				fmt.Println("text:", b.Text)
			case "tool_use":
				fmt.Printf("tool: %s %s\n", b.Name, b.Input)
				results = append(results, block{Type: "tool_result", ToolUseID: b.ID, Content: "22C and sunny"})
			}
		}
		if answer.StopReason != "tool_use" {
			break
		}
		messages = append(messages, message{Role: "user", Content: results})
	}
	fmt.Println(s.Count("/v1/messages"), "requests")
	// Output:
	// text: Echo: Is it warm? Ask get_weather.
	// tool: get_weather {"city":"city"}
	// text: Echo: 22C and sunny
	// 2 requests
}
