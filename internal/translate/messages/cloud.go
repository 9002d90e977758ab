package messages

import (
	"encoding/json"
	"strings"
)

// Cloud is a Messages request rewritten for a cloud host of Claude models
// (Bedrock's InvokeModel, Vertex AI's rawPredict), which take the Messages
// body itself but name the model in the path and the API version in the
// body.
type Cloud struct {
	// Body is the request without model (and, for Bedrock, stream), with
	// anthropic_version set. Every other member is the caller's, as sent:
	// cache_control, thinking and tool blocks survive.
	Body []byte

	// Model and Stream are the request's.
	Model  string
	Stream bool
}

// CloudRequest rewrites a Messages body for a cloud host: version is the
// host's anthropic_version ("bedrock-2023-05-31", "vertex-2023-10-16"),
// kept when the body names one, and keepStream says whether the body
// keeps its stream member (Vertex) or the host streams by path alone
// (Bedrock). A body that is not a JSON object naming its model is an
// *Error.
func CloudRequest(body []byte, version string, keepStream bool) (*Cloud, error) {
	obj, c, err := cloudObject(body)
	if err != nil {
		return nil, err
	}
	delete(obj, "model")
	if !keepStream {
		delete(obj, "stream")
	}
	return c.encode(obj, version)
}

// CountRequest rewrites a /v1/messages/count_tokens body for a cloud
// host that reads the model from the body, as Vertex AI's
// count-tokens:rawPredict does: every member as sent, model included,
// with the host's anthropic_version unless the body names one. A body
// that is not a JSON object naming its model is an *Error.
func CountRequest(body []byte, version string) (*Cloud, error) {
	obj, c, err := cloudObject(body)
	if err != nil {
		return nil, err
	}
	return c.encode(obj, version)
}

// cloudObject decodes a Messages body into its members, and reads its
// model and stream.
func cloudObject(body []byte) (map[string]json.RawMessage, *Cloud, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, nil, invalid("", "the body must be a JSON object")
	}
	c := &Cloud{}
	if err := json.Unmarshal(obj["model"], &c.Model); err != nil || c.Model == "" {
		return nil, nil, invalid("model", "model: must be a model id")
	}
	if s, ok := obj["stream"]; ok && json.Unmarshal(s, &c.Stream) != nil {
		return nil, nil, invalid("stream", "stream: must be a boolean")
	}
	return obj, c, nil
}

// encode returns c with its Body: the members of obj, with
// anthropic_version set to version when obj has none.
func (c *Cloud) encode(obj map[string]json.RawMessage, version string) (*Cloud, error) {
	if _, ok := obj["anthropic_version"]; !ok {
		obj["anthropic_version"], _ = json.Marshal(version)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, invalid("", "the body must be a JSON object")
	}
	c.Body = b
	return c, nil
}

// WithBetas returns body with the caller's anthropic-beta header values
// (comma-separated lists) as its anthropic_beta member, which cloud hosts
// of Claude models read in place of the header; body as it is when it
// names its own, or when betas name none.
func WithBetas(body []byte, betas []string) []byte {
	var list []string
	for _, b := range betas {
		for _, v := range strings.Split(b, ",") {
			if v = strings.TrimSpace(v); v != "" {
				list = append(list, v)
			}
		}
	}
	if len(list) == 0 {
		return body
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		return body
	}
	if _, ok := obj["anthropic_beta"]; ok {
		return body
	}
	obj["anthropic_beta"], _ = json.Marshal(list)
	b, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return b
}

// IsError reports whether body is an Anthropic-shaped error,
// {"type":"error","error":{…}}.
func IsError(body []byte) bool {
	var e struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Type == "error" && len(e.Error) > 0
}
