package chat

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
)

// EmbeddingRequest is an embeddings request (POST /embeddings).
type EmbeddingRequest struct {
	Model          string `json:"model"`
	Input          Inputs `json:"input"`
	Dimensions     *int   `json:"dimensions,omitempty"`
	EncodingFormat string `json:"encoding_format,omitempty"` // "float" (default) or "base64"
	User           string `json:"user,omitempty"`
}

// Inputs is input: one text, several, or token ids (which only OpenAI's
// own models read).
type Inputs struct {
	Texts  []string
	Tokens bool // the input was token ids
}

// UnmarshalJSON decodes a string, an array of strings, or token ids.
func (in *Inputs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	var one string
	if json.Unmarshal(b, &one) == nil {
		*in = Inputs{Texts: []string{one}}
		return nil
	}
	var many []string
	if json.Unmarshal(b, &many) == nil {
		*in = Inputs{Texts: many}
		return nil
	}
	var ids []json.RawMessage
	if json.Unmarshal(b, &ids) == nil {
		*in = Inputs{Tokens: true}
		return nil
	}
	return &ParamError{Param: "input", Message: "must be a string or an array of strings"}
}

// ParseEmbeddingRequest decodes an embeddings request; a malformed member
// is a *ParamError naming it.
func ParseEmbeddingRequest(body []byte) (*EmbeddingRequest, error) {
	var r EmbeddingRequest
	if err := json.Unmarshal(body, &r); err != nil {
		var pe *ParamError
		if asParam(err, &pe) {
			return nil, pe
		}
		return nil, &ParamError{Message: "the request body must be a JSON object with model and input"}
	}
	switch {
	case r.Model == "":
		return nil, &ParamError{Param: "model", Message: "is required"}
	case r.Input.Tokens:
		return nil, &ParamError{Param: "input", Message: "token ids cannot be translated for this provider: send text"}
	case len(r.Input.Texts) == 0:
		return nil, &ParamError{Param: "input", Message: "must not be empty"}
	case r.EncodingFormat != "" && r.EncodingFormat != "float" && r.EncodingFormat != "base64":
		return nil, &ParamError{Param: "encoding_format", Message: "must be float or base64"}
	}
	return &r, nil
}

func asParam(err error, pe **ParamError) bool {
	p, ok := err.(*ParamError)
	if ok {
		*pe = p
	}
	return ok
}

// EncodeEmbeddings returns the OpenAI answer for vectors, one per input in
// order, in the encoding the request asked for.
func EncodeEmbeddings(r *EmbeddingRequest, vectors [][]float64, promptTokens int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[`)
	for i, v := range vectors {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":`)
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`,"embedding":`)
		if r.EncodingFormat == "base64" {
			raw := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(float32(x)))
			}
			q, _ := json.Marshal(base64.StdEncoding.EncodeToString(raw))
			b.Write(q)
		} else {
			q, _ := json.Marshal(v)
			b.Write(q)
		}
		b.WriteByte('}')
	}
	m, _ := json.Marshal(r.Model)
	b.WriteString(`],"model":`)
	b.Write(m)
	b.WriteString(`,"usage":{"prompt_tokens":`)
	b.WriteString(strconv.Itoa(promptTokens))
	b.WriteString(`,"total_tokens":`)
	b.WriteString(strconv.Itoa(promptTokens))
	b.WriteString(`}}`)
	return b.Bytes()
}
