package gateway

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/modelgateway/gateway/internal/jsonscan"
)

// checkCompletionBody is the quick check of a POST /completions body: it
// reports whether decodeBody and Validate would accept body, and its
// model, without building the lossless CompletionRequest, which the route
// does not need since the body is forwarded as sent. It is conservative:
// ok is true only when the full decode would accept the body
// (FuzzCheckCompletionBody holds it to that); it is false for every body the full
// decode refuses, and for rare forms it does not read itself (escaped
// member names, an escaped model, a member given twice with a value that
// fails on its first occurrence), which the full decode then settles.
//
// Member names match exactly, as in decodeObject: "N" is not "n".
func checkCompletionBody(body []byte) (model string, ok bool) {
	if !json.Valid(body) {
		return "", false
	}
	i := jsonscan.SkipSpace(body, 0)
	if i == len(body) || body[i] != '{' {
		return "", false
	}
	var (
		req                          CompletionRequest
		n, bestOf, logprobs, maxToks int
		freq, pres, temp, topP       float64
		echo, stream                 bool
		so                           StreamOptions
	)
	isNull := func(v []byte) bool { return v[0] == 'n' }
	// The setters point the request's fields at the locals above, so
	// that Validate, the one statement of the bounds, reads them.
	setInt := func(dst **int, v []byte, val *int) bool {
		if isNull(v) {
			*dst = nil
			return true
		}
		x, ok := jsonscan.Int(v, strconv.IntSize)
		*val, *dst = int(x), val
		return ok
	}
	setFloat := func(dst **float64, v []byte, val *float64) bool {
		if isNull(v) {
			*dst = nil
			return true
		}
		x, ok := jsonscan.Float(v)
		*val, *dst = x, val
		return ok
	}
	setBool := func(dst **bool, v []byte, val *bool) bool {
		if isNull(v) {
			*dst = nil
			return true
		}
		*val, *dst = v[0] == 't', val
		return v[0] == 't' || v[0] == 'f'
	}
	ok = jsonscan.EachMember(body[i:], func(key, v []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 {
			return false // an escaped name could spell a known one
		}
		switch string(key) {
		case "model":
			switch {
			case isNull(v):
				model = ""
			case v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) && len(v)-2 <= maxModelBytes:
				// encoding/json would replace invalid UTF-8: the full
				// decode reads those, and Validate refuses a model
				// over its bound.
				model = string(v[1 : len(v)-1])
			default:
				return false
			}
			req.Model = model
			return true
		case "suffix", "user":
			return isNull(v) || v[0] == '"'
		case "prompt":
			return isNull(v) || checkPrompt(v)
		case "stop":
			return isNull(v) || checkStop(v)
		case "logit_bias":
			return isNull(v) || checkLogitBias(v)
		case "stream_options":
			if isNull(v) {
				req.StreamOptions = nil
				return true
			}
			req.StreamOptions = &so
			return checkStreamOptions(v)
		case "n":
			return setInt(&req.N, v, &n)
		case "best_of":
			return setInt(&req.BestOf, v, &bestOf)
		case "logprobs":
			return setInt(&req.Logprobs, v, &logprobs)
		case "max_tokens":
			return setInt(&req.MaxTokens, v, &maxToks)
		case "seed":
			if isNull(v) {
				return true
			}
			_, ok := jsonscan.Int(v, 64)
			return ok
		case "frequency_penalty":
			return setFloat(&req.FrequencyPenalty, v, &freq)
		case "presence_penalty":
			return setFloat(&req.PresencePenalty, v, &pres)
		case "temperature":
			return setFloat(&req.Temperature, v, &temp)
		case "top_p":
			return setFloat(&req.TopP, v, &topP)
		case "echo":
			return setBool(&req.Echo, v, &echo)
		case "stream":
			return setBool(&req.Stream, v, &stream)
		}
		return true // a member the gateway does not check
	})
	if !ok || req.Validate() != nil {
		return "", false
	}
	return model, true
}

// checkPrompt reports whether v is a prompt Prompt.UnmarshalJSON and
// Prompt.validate accept: a string, or an array of strings, of integers or
// of non-empty integer arrays, without null elements.
func checkPrompt(v []byte) bool {
	switch v[0] {
	case '"':
		return true
	case '[':
	default:
		return false
	}
	var first byte
	return jsonscan.EachElem(v, func(e []byte) bool {
		if first == 0 {
			first = e[0]
			if first == '-' || first >= '0' && first <= '9' {
				first = '0'
			}
		}
		switch first {
		case '"':
			return e[0] == '"'
		case '0':
			_, ok := jsonscan.Int(e, strconv.IntSize)
			return ok
		case '[':
			n := 0
			ok := e[0] == '[' && jsonscan.EachElem(e, func(t []byte) bool {
				n++
				_, ok := jsonscan.Int(t, strconv.IntSize)
				return ok
			})
			return ok && n > 0
		}
		return false
	})
}

// checkStop reports whether v is a stop Stop.UnmarshalJSON and
// Stop.validate accept: a string, or an array of 1 to 4 strings.
func checkStop(v []byte) bool {
	if v[0] == '"' {
		return true
	}
	n := 0
	ok := v[0] == '[' && jsonscan.EachElem(v, func(e []byte) bool {
		n++
		return e[0] == '"' && n <= maxStopSequences
	})
	return ok && n > 0
}

// checkLogitBias reports whether v is a logit_bias validateLogitBias
// accepts: an object whose names are token ids written plainly and whose
// values are integers from -100 to 100.
func checkLogitBias(v []byte) bool {
	return v[0] == '{' && jsonscan.EachMember(v, func(name, b []byte) bool {
		if len(name) == 0 || name[0] == '-' || len(name) > 1 && name[0] == '0' {
			return false
		}
		if _, ok := jsonscan.Int(name, 64); !ok {
			return false
		}
		f, ok := jsonscan.Float(b)
		return ok && f >= -maxLogitBias && f <= maxLogitBias && f == math.Trunc(f)
	})
}

// checkStreamOptions reports whether v is stream_options StreamOptions
// decodes: an object whose include_usage and include_obfuscation are
// booleans or null.
func checkStreamOptions(v []byte) bool {
	return v[0] == '{' && jsonscan.EachMember(v, func(name, b []byte) bool {
		switch string(name) {
		case "include_usage", "include_obfuscation":
			return b[0] == 't' || b[0] == 'f' || b[0] == 'n'
		}
		return bytes.IndexByte(name, '\\') < 0
	})
}
