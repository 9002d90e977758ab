package gatewaytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

func (s *Server) responsesRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	mux.HandleFunc("GET /v1/responses/{id}", s.handleResponseGet)
	mux.HandleFunc("DELETE /v1/responses/{id}", s.handleResponseDelete)
	mux.HandleFunc("GET /v1/responses/{id}/input_items", s.handleInputItems)
}

// storedResponse is a response kept because its request did not say
// "store": false.
type storedResponse struct {
	resp    response
	input   []json.RawMessage // the request's own input items, with ids
	context []json.RawMessage // every item a follow-up sees: history, input, output
	calls   map[string]bool   // call_ids of the function calls in context
}

// responsesRequest is the part of a Responses request the server reads.
type responsesRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Store              *bool             `json:"store"`
	Stream             *bool             `json:"stream"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Metadata           map[string]string `json:"metadata"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	Text               json.RawMessage   `json:"text"`
	Reasoning          json.RawMessage   `json:"reasoning"`
	Truncation         *string           `json:"truncation"`
	User               *string           `json:"user"`
}

// item is the part of an input or output item the server reads.
type item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// text is the prompt text of an item.
func (it *item) text() string {
	switch it.Type {
	case "message":
		return messageText(it.Content)
	case "function_call":
		return it.Name + " " + it.Arguments
	case "function_call_output":
		return messageText(it.Output)
	}
	return ""
}

// requestError is a request refused with 400 and an OpenAI error naming param.
type requestError struct{ message, param, code string }

func (e *requestError) Error() string { return e.message }

// normalizeInput turns the input field into items as the API lists them:
// a string becomes one user message, message content given as a string
// becomes one text part, and every item gets an id.
func (s *Server) normalizeInput(raw json.RawMessage) ([]json.RawMessage, []item, error) {
	if !present(raw) {
		return nil, nil, &requestError{"Missing required parameter: 'input'.", "input", "missing_required_parameter"}
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		raw = mustMarshal([]map[string]string{{"role": "user", "content": text}})
	}
	var objs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &objs); err != nil {
		return nil, nil, &requestError{"Invalid type for 'input': expected a string or an array of input items.", "input", "invalid_type"}
	}
	out := make([]json.RawMessage, len(objs))
	items := make([]item, len(objs))
	for i, o := range objs {
		param := fmt.Sprintf("input[%d]", i)
		if o == nil {
			return nil, nil, &requestError{"Invalid type for '" + param + "': expected an object.", param, "invalid_type"}
		}
		var typ string
		if t, ok := o["type"]; ok && json.Unmarshal(t, &typ) != nil {
			return nil, nil, &requestError{"Invalid type for '" + param + ".type': expected a string.", param + ".type", "invalid_type"}
		}
		if typ == "" {
			if _, ok := o["role"]; !ok {
				return nil, nil, &requestError{"Missing required parameter: '" + param + ".type'.", param + ".type", "missing_required_parameter"}
			}
			typ = "message"
			o["type"] = mustMarshal(typ)
		}
		if typ == "message" {
			var role string
			json.Unmarshal(o["role"], &role)
			switch role {
			case "user", "system", "developer", "assistant":
			default:
				return nil, nil, &requestError{fmt.Sprintf("Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", role), param + ".role", "invalid_value"}
			}
			var c string
			if json.Unmarshal(o["content"], &c) == nil {
				part := "input_text"
				if role == "assistant" {
					part = "output_text"
				}
				o["content"] = mustMarshal([]map[string]any{{"type": part, "text": c}})
			}
		}
		if _, ok := o["id"]; !ok {
			prefix := map[string]string{"message": "msg_", "function_call": "fc_", "function_call_output": "fco_"}[typ]
			if prefix == "" {
				prefix = "item_"
			}
			o["id"] = mustMarshal(s.nextID(prefix))
		}
		out[i] = mustMarshal(o)
		if err := json.Unmarshal(out[i], &items[i]); err != nil {
			return nil, nil, &requestError{"Invalid type in '" + param + "'.", param, "invalid_type"}
		}
	}
	return out, items, nil
}

func writeRequestError(w http.ResponseWriter, err error) {
	var re *requestError
	if errors.As(err, &re) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", re.message, re.param, re.code)
		return
	}
	writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "", "")
}

// functionTool is the part of a function tool the server reads.
type functionTool struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"Missing required parameter: 'model'.", "model", "missing_required_parameter")
		return
	}
	if req.MaxOutputTokens != nil && *req.MaxOutputTokens < 1 {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"Invalid 'max_output_tokens': integer below minimum value.", "max_output_tokens", "integer_below_min_value")
		return
	}
	var tools []functionTool
	for i, raw := range req.Tools {
		var t functionTool
		if json.Unmarshal(raw, &t) != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("Invalid type for 'tools[%d]'.", i), fmt.Sprintf("tools[%d]", i), "invalid_type")
			return
		}
		if t.Type == "function" {
			if t.Name == "" {
				writeError(w, http.StatusBadRequest, "invalid_request_error",
					fmt.Sprintf("Missing required parameter: 'tools[%d].name'.", i), fmt.Sprintf("tools[%d].name", i), "missing_required_parameter")
				return
			}
			tools = append(tools, t)
		}
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	mode, forced := "auto", ""
	if present(req.ToolChoice) {
		var c struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(req.ToolChoice, &mode) != nil {
			if json.Unmarshal(req.ToolChoice, &c) != nil {
				mode = "invalid"
			} else {
				mode, forced = c.Type, c.Name
			}
		}
		switch {
		case mode == "function" && !slices.Contains(names, forced):
			writeError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("Tool choice '%s' not found in 'tools' parameter.", forced), "tool_choice", "")
			return
		case mode != "auto" && mode != "none" && mode != "required" && mode != "function":
			writeError(w, http.StatusBadRequest, "invalid_request_error",
				"Invalid value for 'tool_choice'.", "tool_choice", "invalid_value")
			return
		}
	}

	var history []json.RawMessage
	calls := map[string]bool{}
	if id := req.PreviousResponseID; id != nil {
		s.mu.Lock()
		prev := s.responses[*id]
		if prev != nil {
			history = prev.context
			for c := range prev.calls {
				calls[c] = true
			}
		}
		s.mu.Unlock()
		if prev == nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("Previous response with id '%s' not found.", *id), "previous_response_id", "previous_response_not_found")
			return
		}
	}
	input, items, err := s.normalizeInput(req.Input)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	var prompt, ask string
	for i := range items {
		switch it := &items[i]; it.Type {
		case "function_call":
			calls[it.CallID] = true
		case "function_call_output":
			if !calls[it.CallID] {
				writeError(w, http.StatusBadRequest, "invalid_request_error",
					fmt.Sprintf("No tool call found for function call output with call_id %s.", it.CallID), "input", "")
				return
			}
			prompt, ask = it.text(), ""
		case "message":
			if it.Role == "user" {
				prompt = it.text()
				ask = prompt
			}
		}
	}

	// Usage: every text of the instructions, tools and conversation.
	var units []string
	if req.Instructions != nil {
		units = append(units, *req.Instructions)
	}
	for _, t := range tools {
		units = append(units, t.Name)
	}
	cached := 0
	for _, raw := range history {
		var it item
		json.Unmarshal(raw, &it) // stored items always decode
		units = append(units, it.text())
		cached += len(pieces(it.text()))
	}
	for i := range items {
		units = append(units, items[i].text())
	}

	pc, finish := reply(prompt, req.MaxOutputTokens)
	text := strings.Join(pc, "")
	id := s.nextID("resp_")
	msgID := s.nextID("msg_")
	status := "completed"
	if finish == "length" {
		status = "incomplete"
	}
	msg := outputMessage{ID: msgID, Type: "message", Status: status, Role: "assistant",
		Content: []outputText{{Type: "output_text", Text: text, Annotations: []json.RawMessage{}}}}
	output := []json.RawMessage{mustMarshal(msg)}
	var call *functionCall
	outTokens := len(pc)
	if status == "completed" {
		if i := pickTool(names, ask, mode, forced); i >= 0 {
			args := toolArguments(tools[i].Parameters)
			call = &functionCall{ID: s.nextID("fc_"), Type: "function_call", Status: "completed",
				CallID: s.nextID("call_"), Name: tools[i].Name, Arguments: args}
			output = append(output, mustMarshal(call))
			outTokens += len(argumentChunks(args))
		}
	}

	resp := s.newResponse(id, &req)
	resp.Status = status
	if status == "incomplete" {
		resp.IncompleteDetails = json.RawMessage(`{"reason":"max_output_tokens"}`)
	}
	resp.Output = output
	in := tokens(units)
	resp.Usage = &responseUsage{InputTokens: in, OutputTokens: outTokens, TotalTokens: in + outTokens}
	resp.Usage.InputTokensDetails.CachedTokens = cached
	if req.Store == nil || *req.Store {
		st := &storedResponse{resp: resp, input: input, calls: calls}
		st.context = append(slices.Clip(history), input...)
		st.context = append(st.context, output...)
		if call != nil {
			calls[call.CallID] = true
		}
		s.mu.Lock()
		s.responses[id] = st
		s.mu.Unlock()
	}
	if !streamRequested(req.Stream) {
		writeOK(w, r, resp)
		return
	}

	var events [][]byte
	add := func(e responseEvent) {
		e.SequenceNumber = len(events)
		events = append(events, mustMarshal(e))
	}
	pending := s.newResponse(id, &req)
	add(responseEvent{Type: "response.created", Response: &pending})
	add(responseEvent{Type: "response.in_progress", Response: &pending})
	zero, one := 0, 1
	started := msg
	started.Status = "in_progress"
	started.Content = []outputText{}
	add(responseEvent{Type: "response.output_item.added", OutputIndex: &zero, Item: mustMarshal(started)})
	empty := outputText{Type: "output_text", Annotations: []json.RawMessage{}}
	add(responseEvent{Type: "response.content_part.added", ItemID: msgID, OutputIndex: &zero, ContentIndex: &zero, Part: &empty})
	noLogprobs := json.RawMessage("[]")
	for _, p := range pc {
		add(responseEvent{Type: "response.output_text.delta", ItemID: msgID, OutputIndex: &zero, ContentIndex: &zero, Delta: strPtr(p), Logprobs: noLogprobs})
	}
	add(responseEvent{Type: "response.output_text.done", ItemID: msgID, OutputIndex: &zero, ContentIndex: &zero, Text: &text, Logprobs: noLogprobs})
	add(responseEvent{Type: "response.content_part.done", ItemID: msgID, OutputIndex: &zero, ContentIndex: &zero, Part: &msg.Content[0]})
	add(responseEvent{Type: "response.output_item.done", OutputIndex: &zero, Item: output[0]})
	if call != nil {
		startedCall := *call
		startedCall.Status, startedCall.Arguments = "in_progress", ""
		add(responseEvent{Type: "response.output_item.added", OutputIndex: &one, Item: mustMarshal(startedCall)})
		for _, c := range argumentChunks(call.Arguments) {
			add(responseEvent{Type: "response.function_call_arguments.delta", ItemID: call.ID, OutputIndex: &one, Delta: strPtr(c)})
		}
		add(responseEvent{Type: "response.function_call_arguments.done", ItemID: call.ID, OutputIndex: &one, Arguments: &call.Arguments})
		add(responseEvent{Type: "response.output_item.done", OutputIndex: &one, Item: output[1]})
	}
	add(responseEvent{Type: "response." + status, Response: &resp})
	s.writeStream(w, r, http.StatusOK, events, -1)
}

// newResponse returns a response in progress with the request's settings.
func (s *Server) newResponse(id string, req *responsesRequest) response {
	resp := response{
		ID: id, Object: "response", CreatedAt: s.clock().Unix(), Status: "in_progress",
		Error: json.RawMessage(nullJSON), IncompleteDetails: json.RawMessage(nullJSON),
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: req.Model,
		Output: []json.RawMessage{}, ParallelToolCalls: true, PreviousResponseID: req.PreviousResponseID,
		Reasoning: json.RawMessage(`{"effort":null,"summary":null}`), Store: req.Store == nil || *req.Store,
		Temperature: 1, Text: json.RawMessage(`{"format":{"type":"text"}}`), ToolChoice: json.RawMessage(`"auto"`),
		Tools: req.Tools, TopP: 1, Truncation: "disabled", User: req.User, Metadata: req.Metadata,
	}
	if resp.Tools == nil {
		resp.Tools = []json.RawMessage{}
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	if req.ParallelToolCalls != nil {
		resp.ParallelToolCalls = *req.ParallelToolCalls
	}
	if req.Temperature != nil {
		resp.Temperature = *req.Temperature
	}
	if req.TopP != nil {
		resp.TopP = *req.TopP
	}
	if present(req.Text) {
		resp.Text = req.Text
	}
	if present(req.Reasoning) {
		resp.Reasoning = req.Reasoning
	}
	if present(req.ToolChoice) {
		resp.ToolChoice = req.ToolChoice
	}
	if req.Truncation != nil {
		resp.Truncation = *req.Truncation
	}
	return resp
}

func (s *Server) storedResponse(w http.ResponseWriter, r *http.Request) *storedResponse {
	id := r.PathValue("id")
	s.mu.Lock()
	st := s.responses[id]
	s.mu.Unlock()
	if st == nil {
		writeError(w, http.StatusNotFound, "invalid_request_error",
			fmt.Sprintf("Response with id '%s' not found.", id), "", "")
	}
	return st
}

func (s *Server) handleResponseGet(w http.ResponseWriter, r *http.Request) {
	if st := s.storedResponse(w, r); st != nil {
		writeOK(w, r, st.resp)
	}
}

func (s *Server) handleResponseDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	st := s.responses[id]
	delete(s.responses, id)
	s.mu.Unlock()
	if st == nil {
		writeError(w, http.StatusNotFound, "invalid_request_error",
			fmt.Sprintf("Response with id '%s' not found.", id), "", "")
		return
	}
	writeOK(w, r, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, "response", true})
}

func (s *Server) handleInputItems(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("Invalid 'limit': %q is not an integer between 1 and 100.", v), "limit", "invalid_value")
			return
		}
		limit = n
	}
	order := q.Get("order")
	if order != "" && order != "asc" && order != "desc" {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("Invalid value: '%s'. Supported values are: 'asc' and 'desc'.", order), "order", "invalid_value")
		return
	}
	st := s.storedResponse(w, r)
	if st == nil {
		return
	}
	items := slices.Clone(st.input)
	if order == "desc" {
		slices.Reverse(items)
	}
	idOf := func(raw json.RawMessage) string {
		var v struct {
			ID string `json:"id"`
		}
		json.Unmarshal(raw, &v)
		return v.ID
	}
	if after := q.Get("after"); after != "" {
		if i := slices.IndexFunc(items, func(it json.RawMessage) bool { return idOf(it) == after }); i >= 0 {
			items = items[i+1:]
		}
	}
	if before := q.Get("before"); before != "" {
		if i := slices.IndexFunc(items, func(it json.RawMessage) bool { return idOf(it) == before }); i >= 0 {
			items = items[:i]
		}
	}
	out := itemList{Object: "list", Data: items, HasMore: len(items) > limit}
	if out.HasMore {
		out.Data = items[:limit]
	}
	if len(out.Data) > 0 {
		out.FirstID = strPtr(idOf(out.Data[0]))
		out.LastID = strPtr(idOf(out.Data[len(out.Data)-1]))
	} else {
		out.Data = []json.RawMessage{}
	}
	writeOK(w, r, out)
}

// The JSON shapes of the Responses API, after OpenAI's published schemas.

type response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Error              json.RawMessage   `json:"error"`
	IncompleteDetails  json.RawMessage   `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []json.RawMessage `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          json.RawMessage   `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        float64           `json:"temperature"`
	Text               json.RawMessage   `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []json.RawMessage `json:"tools"`
	TopP               float64           `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *responseUsage    `json:"usage"`
	User               *string           `json:"user"`
	Metadata           map[string]string `json:"metadata"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type outputText struct {
	Type        string            `json:"type"`
	Text        string            `json:"text"`
	Annotations []json.RawMessage `json:"annotations"`
}

type outputMessage struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type functionCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type responseEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *response       `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	Item           json.RawMessage `json:"item,omitempty"`
	Part           *outputText     `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	Logprobs       json.RawMessage `json:"logprobs,omitempty"`
}

type itemList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}
