package guardrail

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
)

func newModelWhitelist(params json.RawMessage) (Check, error) {
	var p struct {
		Models []string `json:"models"`
		Not    bool     `json:"not"`
	}
	if err := DecodeParameters(params, &p); err != nil {
		return nil, err
	}
	if err := nonEmpty("models", p.Models); err != nil {
		return nil, err
	}
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		if in.Model == "" {
			return Verdict{Explanation: "The request names no model."}, nil
		}
		return verdict(slices.Contains(p.Models, in.Model), p.Not,
			"Model "+quote(in.Model)+" is in the allowed list.", "Model "+quote(in.Model)+" is not in the allowed list."), nil
	}), nil
}

// requestTypeNames are the request types allowedRequestTypes takes.
var requestTypeNames = []string{"complete", "chatComplete", "embed", "rerank", "moderate", "proxy", "imageGenerate",
	"createSpeech", "createTranscription", "createTranslation", "realtime", "uploadFile", "listFiles", "retrieveFile",
	"deleteFile", "retrieveFileContent", "createBatch", "retrieveBatch", "cancelBatch", "listBatches", "getBatchOutput",
	"listFinetunes", "createFinetune", "retrieveFinetune", "cancelFinetune", "createModelResponse", "getModelResponse",
	"deleteModelResponse", "listResponseInputItems", "messages"}

// typeList decodes a list of request types: a JSON array, or a string of
// comma-separated names.
type typeList []string

func (l *typeList) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = nil
		for t := range strings.SplitSeq(s, ",") {
			if t = strings.TrimSpace(t); t != "" {
				*l = append(*l, t)
			}
		}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

func newAllowedRequestTypes(params json.RawMessage) (Check, error) {
	var p struct {
		AllowedTypes typeList `json:"allowedTypes"`
		BlockedTypes typeList `json:"blockedTypes"`
	}
	if err := DecodeParameters(params, &p); err != nil {
		return nil, err
	}
	for name, l := range map[string]typeList{"allowedTypes": p.AllowedTypes, "blockedTypes": p.BlockedTypes} {
		for _, t := range l {
			if !slices.Contains(requestTypeNames, t) {
				return nil, paramError(name, "holds "+quote(t)+", not a request type")
			}
			if name == "allowedTypes" && slices.Contains(p.BlockedTypes, t) {
				return nil, paramError(name, "holds "+quote(t)+", which blockedTypes also holds")
			}
		}
	}
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		t := in.RequestType
		switch {
		case t == "":
			return Verdict{Explanation: "The request's type is unknown."}, nil
		case slices.Contains(p.BlockedTypes, t):
			return Verdict{Explanation: "Request type " + quote(t) + " is blocked."}, nil
		case len(p.AllowedTypes) > 0 && !slices.Contains(p.AllowedTypes, t):
			return Verdict{Explanation: "Request type " + quote(t) + " is not in the allowed list."}, nil
		}
		return Verdict{Pass: true, Explanation: "Request type " + quote(t) + " is allowed."}, nil
	}), nil
}

func newRequiredMetadataKeys(params json.RawMessage) (Check, error) {
	keys, op, err := listParams(params, "metadataKeys", "all")
	if err != nil {
		return nil, err
	}
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		found, missing := split(keys, func(k string) bool { _, ok := in.Metadata[k]; return ok })
		return judge(op, "metadata keys", found, missing), nil
	}), nil
}

func newJSONKeys(params json.RawMessage) (Check, error) {
	keys, op, err := listParams(params, "keys", "any")
	if err != nil {
		return nil, err
	}
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		var best *Verdict
		bestFound := -1
		for _, v := range extractJSON(in.Text) {
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			found, missing := split(keys, func(k string) bool { _, ok := obj[k]; return ok })
			vd := judge(op, "keys", found, missing)
			if vd.Pass {
				return vd, nil
			}
			if len(found) > bestFound {
				best, bestFound = &vd, len(found)
			}
		}
		if best == nil {
			return Verdict{Explanation: "The text holds no JSON object."}, nil
		}
		return *best, nil
	}), nil
}

// maxJSONCandidates bounds the places extractJSON tries to decode an
// object from, so a text full of braces costs little.
const maxJSONCandidates = 16

// extractJSON returns the JSON values a text holds: the whole text when it
// is JSON, else the contents of its fenced code blocks that are JSON,
// else the first objects that decode from an opening brace.
func extractJSON(s string) []any {
	var out []any
	decode := func(t string) bool {
		var v any
		if json.Unmarshal([]byte(t), &v) == nil {
			out = append(out, v)
			return true
		}
		return false
	}
	if decode(strings.TrimSpace(s)) {
		return out
	}
	rest := s
	for {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		rest = rest[i+3:]
		end := strings.Index(rest, "```")
		if end < 0 {
			break
		}
		block := strings.TrimLeft(rest[:end], "`")
		block = strings.TrimPrefix(block, "json")
		decode(strings.TrimSpace(block))
		rest = rest[end+3:]
	}
	if len(out) > 0 {
		return out
	}
	tries := 0
	for i := 0; i < len(s) && tries < maxJSONCandidates; i++ {
		if s[i] != '{' {
			continue
		}
		tries++
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var v any
		if dec.Decode(&v) == nil {
			out = append(out, v)
			i += int(dec.InputOffset()) - 1
		}
	}
	return out
}
