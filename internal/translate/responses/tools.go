package responses

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// toolOutput is a function call's output, the member of the item at
// named by member: a string, or text parts.
func toolOutput(raw json.RawMessage, at itemAt, member string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		s, err := stringOf(raw)
		if err != nil {
			return "", invalid(at.param(member), "must be a string or an array of content parts")
		}
		return s, nil
	}
	var parts []textPart
	var err error
	if len(raw) == 0 || raw[0] != '[' {
		err = errNotArray
	} else {
		err = wire.Decode(raw, &parts, readParts)
	}
	if err != nil {
		return "", invalid(at.param(member), "must be a string or an array of content parts")
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "input_text" && p.Type != "output_text" {
			return "", unsupported(at.param(member+"["+strconv.Itoa(j)+"].type"), "tool outputs of type "+strconv.Quote(p.Type)+" cannot be translated")
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// chatTool translates a tool: only function tools have a chat equivalent.
// dt is the tool, if decoded with the body; i is its index in tools.
func chatTool(raw json.RawMessage, dt decodedTool, i int) (chat.Tool, error) {
	param := func(member string) string { return "tools[" + strconv.Itoa(i) + "]" + member }
	t := dt.tool
	if !dt.ok {
		var err error
		if t, err = toolOf(raw); err != nil {
			return chat.Tool{}, invalid(param(""), "must be a tool object")
		}
	}
	if t.Type != "function" {
		return chat.Tool{}, unsupported(param(".type"), "tools of type "+strconv.Quote(t.Type)+" cannot be translated; only function tools can")
	}
	if t.Name == "" {
		return chat.Tool{}, invalid(param(".name"), "is required")
	}
	params := t.Parameters
	if !isSet(params) {
		params = nil
	}
	return chat.Tool{Type: "function", Function: chat.Function{Name: t.Name, Description: t.Description,
		Parameters: params, Strict: t.Strict}}, nil
}

// toolOf decodes a tool that was not decoded with the body, apart from
// chatTool so that its tool does not escape to the heap.
func toolOf(raw json.RawMessage) (wireTool, error) {
	var t wireTool
	err := wire.Decode(raw, &t, decodeTool)
	return t, err
}

// chatToolChoice translates tool_choice.
func chatToolChoice(raw json.RawMessage) (json.RawMessage, error) {
	if !isSet(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return raw, nil
		}
		return nil, invalid("tool_choice", "must be auto, none, required or a function")
	}
	var f struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return nil, invalid("tool_choice", "must be auto, none, required or a function")
	}
	if f.Type != "function" {
		return nil, unsupported("tool_choice.type", "tool choices of type "+strconv.Quote(f.Type)+" cannot be translated")
	}
	if f.Name == "" {
		return nil, invalid("tool_choice.name", "is required")
	}
	b := appendString([]byte(`{"type":"function","function":{"name":`), f.Name)
	return append(b, "}}"...), nil
}

// chatFormat translates text.format into response_format.
func chatFormat(raw json.RawMessage) (*chat.ResponseFormat, error) {
	if !isSet(raw) {
		return nil, nil
	}
	var f struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return nil, invalid("text.format", "must be a format object")
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &chat.ResponseFormat{Type: "json_object"}, nil
	case "json_schema":
		if !isSet(f.Schema) {
			return nil, invalid("text.format.schema", "is required")
		}
		if f.Name == "" {
			f.Name = "response"
		}
		return &chat.ResponseFormat{Type: "json_schema", JSONSchema: &chat.JSONSchema{Name: f.Name,
			Description: f.Description, Schema: f.Schema, Strict: f.Strict}}, nil
	}
	return nil, unsupported("text.format.type", "formats of type "+strconv.Quote(f.Type)+" cannot be translated")
}
