package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// blockType is the error for a block a role cannot hold in chat.
func blockType(typ, p, role string) *Error {
	switch typ {
	case "document", "search_result", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
		"code_execution_tool_result", "mcp_tool_use", "mcp_tool_result", "container_upload", "tool_use",
		"tool_result", "thinking", "redacted_thinking":
		return unsupported(p+".type", typ+" blocks in "+role+" messages have no equivalent in chat completions")
	}
	return invalid(p+".type", "unknown content block type "+strconv.Quote(typ))
}

// image returns an image block as an image_url part.
func image(b *msgBlock, p path) (chat.Part, error) {
	s := b.Source
	if s == nil {
		return chat.Part{}, invalid(p.at(".source"), "is required")
	}
	switch s.Type {
	case "base64":
		if s.MediaType == "" || s.Data == "" {
			return chat.Part{}, invalid(p.at(".source"), "a base64 image needs media_type and data")
		}
		return chat.Part{Type: "image_url", ImageURL: &chat.ImageURL{URL: "data:" + s.MediaType + ";base64," + s.Data}}, nil
	case "url":
		if s.URL == "" {
			return chat.Part{}, invalid(p.at(".source.url"), "is required")
		}
		return chat.Part{Type: "image_url", ImageURL: &chat.ImageURL{URL: s.URL}}, nil
	}
	return chat.Part{}, unsupported(p.at(".source.type"), "images of source type "+strconv.Quote(s.Type)+" have no equivalent in chat completions")
}

// toolResult returns the text of a tool result, block p, and its images
// apart.
func toolResult(c *msgContent, p path, t *Translation) (*string, []chat.Part, error) {
	if c == nil {
		return new(string), nil, nil
	}
	if c.Text != nil {
		return c.Text, nil, nil
	}
	var text joined
	var images []chat.Part
	for k := range c.Blocks {
		b := &c.Blocks[k]
		bp := path{p.msg, p.block, k}
		if b.Cache != nil {
			t.drop(bp.at(".cache_control"))
		}
		switch b.Type {
		case "text":
			sep := ""
			if text.len() > 0 {
				sep = "\n"
			}
			text.add(sep, &b.Text)
		case "image":
			part, err := image(b, bp)
			if err != nil {
				return nil, nil, err
			}
			images = append(images, part)
		default:
			return nil, nil, blockType(b.Type, bp.at(""), "tool_result")
		}
	}
	return text.ptr(), images, nil
}

// compact returns a tool_use input as chat's arguments text.
func compact(input json.RawMessage) (string, error) {
	input = bytes.TrimSpace(input)
	if len(input) == 0 || string(input) == "null" {
		return "{}", nil
	}
	if input[0] != '{' {
		return "", errors.New("not an object")
	}
	if !bytes.ContainsAny(input, " \t\r\n") {
		return string(input), nil // compact already
	}
	return string(wire.AppendCompact(make([]byte, 0, len(input)), input)), nil
}

// tools returns the request's tools as chat functions.
func tools(in []msgTool, t *Translation) ([]chat.Tool, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]chat.Tool, 0, len(in))
	for i := range in {
		tool := &in[i]
		p := "tools[" + strconv.Itoa(i) + "]"
		if tool.Type != "" && tool.Type != "custom" {
			return nil, unsupported(p+".type", "the server tool "+strconv.Quote(tool.Type)+" has no equivalent in chat completions")
		}
		if tool.Name == "" {
			return nil, invalid(p+".name", "is required")
		}
		if len(tool.InputSchema) == 0 {
			return nil, invalid(p+".input_schema", "is required")
		}
		if tool.Cache != nil {
			t.drop(p + ".cache_control")
		}
		out = append(out, chat.Tool{Type: "function", Function: chat.Function{Name: tool.Name,
			Description: tool.Description, Parameters: tool.InputSchema}})
	}
	return out, nil
}
