package bedrock_test

import (
	"encoding/base64"
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"testing"
)

// TestEmbeddingsTranslation: OpenAI embeddings requests become one
// InvokeModel call of a Titan or Cohere model, and their answers OpenAI's.
func TestEmbeddingsTranslation(t *testing.T) {
	float32s := func(fs ...float32) string {
		b := make([]byte, 0, 4*len(fs))
		for _, f := range fs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	cases := []struct {
		name, body   string
		path         string // the escaped path sent
		native       string
		answer       string
		tokensHeader string
		want         string
	}{
		{
			name: "titan v2 with dimensions",
			body: `{"model":"amazon.titan-embed-text-v2:0","input":"hello","dimensions":256}`,
			path: "/model/amazon.titan-embed-text-v2:0/invoke", native: `{"inputText":"hello","dimensions":256}`,
			answer: `{"embedding":[0.5,-0.25],"embeddingsByType":{"float":[0.5,-0.25]},"inputTextTokenCount":3}`,
			want: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25]}],
				"model":"amazon.titan-embed-text-v2:0","usage":{"prompt_tokens":3,"total_tokens":3}}`,
		},
		{
			name: "titan image model, one input in an array",
			body: `{"model":"amazon.titan-embed-image-v1","input":["a cat"],"dimensions":384}`,
			path: "/model/amazon.titan-embed-image-v1/invoke", native: `{"inputText":"a cat","embeddingConfig":{"outputEmbeddingLength":384}}`,
			answer: `{"embedding":[1],"inputTextTokenCount":2,"message":null}`,
			want: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1]}],
				"model":"amazon.titan-embed-image-v1","usage":{"prompt_tokens":2,"total_tokens":2}}`,
		},
		{
			name: "cohere v3, input_type, tokens from the header",
			body: `{"model":"cohere.embed-english-v3","input":["a","b"],"input_type":"search_query","user":"u-1"}`,
			path: "/model/cohere.embed-english-v3/invoke", native: `{"texts":["a","b"],"input_type":"search_query"}`,
			answer:       `{"embeddings":[[0.1,0.2],[0.3,0.4]],"id":"e-1","response_type":"embeddings_floats","texts":["a","b"]}`,
			tokensHeader: "4",
			want: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]},{"object":"embedding","index":1,"embedding":[0.3,0.4]}],
				"model":"cohere.embed-english-v3","usage":{"prompt_tokens":4,"total_tokens":4}}`,
		},
		{
			name: "cohere v4 inference profile, dimensions, base64",
			body: `{"model":"us.cohere.embed-v4:0","input":"a","dimensions":256,"encoding_format":"base64"}`,
			path: "/model/us.cohere.embed-v4:0/invoke", native: `{"texts":["a"],"input_type":"search_document","embedding_types":["float"],"output_dimension":256}`,
			answer:       `{"embeddings":{"float":[[1,0.5]]},"id":"e-2","response_type":"embeddings_by_type","texts":["a"]}`,
			tokensHeader: "1",
			want: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"` + float32s(1, 0.5) + `"}],
				"model":"us.cohere.embed-v4:0","usage":{"prompt_tokens":1,"total_tokens":1}}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, fb := translationEnv(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if c.tokensHeader != "" {
					w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", c.tokensHeader)
				}
				io.WriteString(w, c.answer)
			})
			res, b := e.post(t, "/embeddings", c.body)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, b)
			}
			n := fb.requests()[0]
			if n.EscapedPath != c.path || n.Unsigned != "" || e.rt.requests()[0].URL != euWest3+c.path {
				t.Errorf("Bedrock got %s (signature: %q), sent to %s", n.EscapedPath, n.Unsigned, e.rt.requests()[0].URL)
			}
			if d := jsonDiff(t, c.native, []byte(n.Body)); d != "" {
				t.Errorf("native request (-want +got):\n%s", d)
			}
			if d := jsonDiff(t, c.want, b); d != "" {
				t.Errorf("OpenAI answer (-want +got):\n%s", d)
			}
		})
	}
}
