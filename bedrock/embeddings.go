package bedrock

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/chat"
)

// cohereMaxTexts is how many texts one Cohere embed call takes.
const cohereMaxTexts = 96

// cohereInputTypes are the input_type values Cohere's embed models take.
var cohereInputTypes = map[string]bool{"search_document": true, "search_query": true, "classification": true, "clustering": true}

// embedModel returns the family ("titan" or "cohere") of the embedding
// model id names, and its base id: id may be a foundation model id
// (amazon.titan-embed-text-v2:0), a cross-region inference profile id
// (us.cohere.embed-v4:0) or a foundation model ARN. Other ids, e.g. the
// ARN of a provisioned model, which does not say what it serves, are "".
func embedModel(id string) (family, base string) {
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	for range 2 {
		switch {
		case strings.HasPrefix(id, "amazon.titan-embed"):
			return "titan", id
		case strings.HasPrefix(id, "cohere.embed"):
			return "cohere", id
		}
		_, rest, ok := strings.Cut(id, ".") // an inference profile's geography
		if !ok {
			break
		}
		id = rest
	}
	return "", ""
}

// translateEmbeddings is Translate for RouteEmbeddings. Titan's invoke
// takes one text, so a Titan request with several inputs is refused:
// one Translation is one call. Cohere's takes up to 96.
func translateEmbeddings(body []byte) (*gateway.Translation, error) {
	req, err := chat.ParseEmbeddingRequest(body)
	if err != nil {
		return nil, paramError(err)
	}
	// input_type is Cohere's, and not OpenAI's: it is read when sent.
	var ext struct {
		InputType *string `json:"input_type"`
	}
	json.Unmarshal(body, &ext)
	if req.Dimensions != nil && *req.Dimensions <= 0 {
		return nil, badRequest(gateway.CodeInvalidJSON, "dimensions", "dimensions: must be positive")
	}
	path, rawPath, err := modelPath(req.Model, "invoke")
	if err != nil {
		return nil, err
	}
	var native any
	family, base := embedModel(req.Model)
	switch family {
	case "titan":
		if len(req.Input.Texts) > 1 {
			return nil, unsupported("input", "a Titan embedding model embeds one text per call; send one input")
		}
		t := map[string]any{"inputText": req.Input.Texts[0]}
		if req.Dimensions != nil {
			switch {
			case strings.HasPrefix(base, "amazon.titan-embed-text-v2"):
				t["dimensions"] = *req.Dimensions
			case strings.HasPrefix(base, "amazon.titan-embed-image"):
				t["embeddingConfig"] = map[string]int{"outputEmbeddingLength": *req.Dimensions}
			default:
				return nil, unsupported("dimensions", "this Titan model has one size")
			}
		}
		native = t
	case "cohere":
		if len(req.Input.Texts) > cohereMaxTexts {
			return nil, unsupported("input", "a Cohere embedding model embeds at most "+strconv.Itoa(cohereMaxTexts)+" texts per call")
		}
		inputType := "search_document"
		if ext.InputType != nil {
			if !cohereInputTypes[*ext.InputType] {
				return nil, badRequest(gateway.CodeInvalidJSON, "input_type", "input_type: must be search_document, search_query, classification or clustering")
			}
			inputType = *ext.InputType
		}
		c := map[string]any{"texts": req.Input.Texts, "input_type": inputType}
		if strings.HasPrefix(base, "cohere.embed-v4") {
			c["embedding_types"] = []string{"float"}
			if req.Dimensions != nil {
				c["output_dimension"] = *req.Dimensions
			}
		} else if req.Dimensions != nil {
			return nil, unsupported("dimensions", "this Cohere model has one size")
		}
		native = c
	default:
		return nil, unsupported("model", "embeddings are translated for Titan (amazon.titan-embed-*) and Cohere (cohere.embed-*) models only")
	}
	b, err := json.Marshal(native)
	if err != nil {
		return nil, err
	}
	return &gateway.Translation{Path: path, RawPath: rawPath, Body: b, Response: func(res *http.Response) error {
		return embeddingsResponse(req, family, res)
	}}, nil
}

// embeddingsResponse turns the answer of a Titan or Cohere embedding
// model into OpenAI's. Cohere's answers carry no token count: Bedrock's
// X-Amzn-Bedrock-Input-Token-Count header gives it.
func embeddingsResponse(req *chat.EmbeddingRequest, family string, res *http.Response) error {
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return bedrockError(res)
	}
	b, err := readAnswer(res, maxAnswer)
	if err != nil {
		return err
	}
	var vectors [][]float64
	tokens := -1
	if family == "titan" {
		var a struct {
			Embedding           []float64 `json:"embedding"`
			InputTextTokenCount *int      `json:"inputTextTokenCount"`
		}
		if json.Unmarshal(b, &a) != nil || a.Embedding == nil {
			return badAnswer("no embedding")
		}
		vectors = [][]float64{a.Embedding}
		if a.InputTextTokenCount != nil {
			tokens = *a.InputTextTokenCount
		}
	} else {
		var a struct {
			Embeddings json.RawMessage `json:"embeddings"`
		}
		if json.Unmarshal(b, &a) != nil {
			return badAnswer("invalid JSON")
		}
		// embeddings is a list of vectors, or, when embedding_types was
		// sent, an object of lists by type.
		if json.Unmarshal(a.Embeddings, &vectors) != nil || vectors == nil {
			var byType struct {
				Float [][]float64 `json:"float"`
			}
			if json.Unmarshal(a.Embeddings, &byType) != nil {
				return badAnswer("invalid embeddings")
			}
			vectors = byType.Float
		}
	}
	if len(vectors) != len(req.Input.Texts) {
		return badAnswer(strconv.Itoa(len(vectors)) + " embeddings for " + strconv.Itoa(len(req.Input.Texts)) + " inputs")
	}
	if tokens < 0 {
		tokens, _ = strconv.Atoi(res.Header.Get("X-Amzn-Bedrock-Input-Token-Count"))
	}
	setBody(res, "application/json", chat.EncodeEmbeddings(req, vectors, tokens))
	return nil
}
