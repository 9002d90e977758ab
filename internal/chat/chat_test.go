package chat

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRequest(t *testing.T) {
	r, err := ParseRequest([]byte(`{"model":"m","seed":3,"stream_options":null,"stop":"x","max_tokens":9,
		"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}],
		"tool_choice":{"type":"function","function":{"name":"f"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Messages[0].Content.String() != "ab" || r.Messages[1].Content.Text != nil || len(r.Messages[1].ToolCalls) != 1 ||
		r.MaxOutputTokens() != 9 || !cmp.Equal(r.Stop, Stop{"x"}) || string(r.Extra["seed"]) != "3" || r.Extra["stream_options"] != nil {
		t.Errorf("parsed %+v", r)
	}
	if tc, err := r.ParseToolChoice(); err != nil || tc != (ToolChoice{Mode: "function", Name: "f"}) {
		t.Errorf("tool choice %+v, %v", tc, err)
	}
	for body, param := range map[string]string{
		`{"messages":[{"role":"user","content":"x"}]}`:                              "model",
		`{"model":"m","messages":[]}`:                                               "messages",
		`{"model":"m","messages":[{"role":"bot","content":"x"}]}`:                   "messages[0].role",
		`{"model":"m","max_tokens":"9","messages":[{"role":"user","content":"x"}]}`: "max_tokens",
		`{"model":"m","stop":[1],"messages":[{"role":"user","content":"x"}]}`:       "stop",
		`[1]`: "",
	} {
		_, err := ParseRequest([]byte(body))
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%s: %v, want a ParamError naming %q", body, err, param)
		}
	}
}

func TestDataURL(t *testing.T) {
	if mt, d, ok := DataURL("data:image/png;base64,AAAA"); !ok || mt != "image/png" || d != "AAAA" {
		t.Errorf("DataURL = %q %q %v", mt, d, ok)
	}
	for _, u := range []string{"https://x/y.png", "data:image/png,AAAA", "data:;base64,AA"} {
		if _, _, ok := DataURL(u); ok {
			t.Errorf("DataURL(%q) accepted", u)
		}
	}
}

func TestEncodeEmbeddings(t *testing.T) {
	r := &EmbeddingRequest{Model: "e", EncodingFormat: "base64"}
	var out struct {
		Data []struct {
			Index     int    `json:"index"`
			Embedding string `json:"embedding"`
		} `json:"data"`
		Usage struct{ PromptTokens, TotalTokens int } `json:"usage"`
	}
	if err := json.Unmarshal(EncodeEmbeddings(r, [][]float64{{1.5, -2}}, 4), &out); err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(out.Data[0].Embedding)
	if len(raw) != 8 || math.Float32frombits(binary.LittleEndian.Uint32(raw[4:])) != -2 {
		t.Errorf("base64 embedding %v", raw)
	}
	if _, err := ParseEmbeddingRequest([]byte(`{"model":"e","input":[1,2]}`)); err == nil {
		t.Error("token ids accepted")
	}
}

// FuzzParseRequest: any body is parsed or refused with a *ParamError,
// never a panic.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"tool","content":[{"type":"image_url","image_url":{"url":"data:a;base64,"}}]}],"tool_choice":"required"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseRequest(body)
		var pe *ParamError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error %v is not a ParamError", err)
		}
		if err == nil {
			r.ParseToolChoice()
			for _, m := range r.Messages {
				_ = m.Content.String()
			}
		}
	})
}
