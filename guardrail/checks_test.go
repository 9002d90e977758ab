package guardrail

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// run builds check id with params and runs it on in, whose Text is set
// from Parts when empty.
func run(t *testing.T, id, params string, in *Input) Verdict {
	t.Helper()
	c, err := NewRegistry(Env{}).New(id, json.RawMessage(params))
	if err != nil {
		t.Fatalf("New(%s, %s): %v", id, params, err)
	}
	if in.Text == "" {
		in.Text = strings.Join(in.Parts, "\n")
	}
	v, err := c.Check(context.Background(), in)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return v
}

func text(s string) *Input { return &Input{Phase: BeforeRequest, Parts: []string{s}} }

func TestChecks(t *testing.T) {
	tests := []struct {
		name, id, params string
		in               *Input
		pass             bool
	}{
		{"regex matches", "default.regexMatch", `{"rule":"\\b(banned|harmful)\\b"}`, text("this is harmful"), true},
		{"regex misses", "default.regexMatch", `{"rule":"\\bbanned\\b"}`, text("all fine"), false},
		{"regex not", "default.regexMatch", `{"rule":"banned","not":true}`, text("this is banned"), false},
		{"regex not passes", "default.regexMatch", `{"rule":"banned","not":true}`, text("fine"), true},
		{"contains any", "default.contains", `{"words":["please","help"],"operator":"any"}`, text("can you help"), true},
		{"contains any none found", "default.contains", `{"words":["please"]}`, text("now"), false},
		{"contains all", "default.contains", `{"words":["a","b"],"operator":"all"}`, text("a and b"), true},
		{"contains all missing", "default.contains", `{"words":["a","zz"],"operator":"all"}`, text("a and b"), false},
		{"contains none", "default.contains", `{"words":["secret"],"operator":"none"}`, text("public"), true},
		{"contains none found", "default.contains", `{"words":["secret"],"operator":"none"}`, text("a secret"), false},
		{"words in range", "default.wordCount", `{"minWords":2,"maxWords":3}`, text("one two three"), true},
		{"words over", "default.wordCount", `{"maxWords":2}`, text("one two three"), false},
		{"words not", "default.wordCount", `{"minWords":2,"maxWords":3,"not":true}`, text("one"), true},
		{"words empty", "default.wordCount", `{"minWords":1}`, text(""), false},
		{"sentences", "default.sentenceCount", `{"minSentences":2,"maxSentences":2}`, text("Pi is 3.14. Really?! Yes"), true},
		{"sentences ellipsis", "default.sentenceCount", `{"minSentences":2}`, text("Wait... what"), false},
		{"characters runes", "default.characterCount", `{"minCharacters":3,"maxCharacters":3}`, text("héé"), true},
		{"characters over", "default.characterCount", `{"maxCharacters":3}`, text("four"), false},
		{"ends with", "default.endsWith", `{"suffix":"done"}`, text("all done.\n"), true},
		{"ends with not", "default.endsWith", `{"suffix":"done","not":true}`, text("all done"), false},
		{"ends without", "default.endsWith", `{"suffix":"done"}`, text("not yet"), false},
		{"lower", "default.isAllLowerCase", `{}`, text("all lower, 123 ü"), true},
		{"lower alias fails", "default.alllowercase", ``, text("Not lower"), false},
		{"upper", "default.alluppercase", ``, text("ALL UPPER 1 Ü"), true},
		{"upper not", "default.alluppercase", `{"not":true}`, text("ALL UPPER"), false},
		{"code sql", "default.containsCode", `{"format":"SQL"}`, text("run\n```sql\nSELECT 1;\n```\n"), true},
		{"code other", "default.containsCode", `{"format":"SQL"}`, text("```py\nprint(1)\n```"), false},
		{"code none not", "default.containsCode", `{"format":"Go","not":true}`, text("no code"), true},
		{"json keys all", "default.jsonKeys", `{"keys":["a","b"],"operator":"all"}`, text(`here {"a":1,"b":2} it is`), true},
		{"json keys missing", "default.jsonKeys", `{"keys":["a","c"],"operator":"all"}`, text(`{"a":1,"b":2}`), false},
		{"json keys fenced", "default.jsonKeys", `{"keys":["x"]}`, text("```json\n{\"x\":{\"y\":1}}\n```"), true},
		{"json keys no json", "default.jsonKeys", `{"keys":["x"]}`, text("nothing"), false},
		{"model allowed", "default.modelWhitelist", `{"models":["gpt-4o"]}`, &Input{Model: "gpt-4o"}, true},
		{"model refused", "default.modelWhitelist", `{"models":["gpt-4o"]}`, &Input{Model: "gpt-5"}, false},
		{"model none", "default.modelWhitelist", `{"models":["gpt-4o"]}`, &Input{}, false},
		{"type allowed", "default.allowedRequestTypes", `{"allowedTypes":["chatComplete","embed"]}`, &Input{RequestType: "embed"}, true},
		{"type not allowed", "default.allowedRequestTypes", `{"allowedTypes":"chatComplete, embed"}`, &Input{RequestType: "imageGenerate"}, false},
		{"type blocked", "default.allowedRequestTypes", `{"blockedTypes":["embed"]}`, &Input{RequestType: "embed"}, false},
		{"type unrestricted", "default.allowedRequestTypes", `{}`, &Input{RequestType: "embed"}, true},
		{"metadata all", "default.requiredMetadataKeys", `{"metadataKeys":["user","team"]}`, &Input{Metadata: map[string]string{"user": "u", "team": "t"}}, true},
		{"metadata missing", "default.requiredMetadataKeys", `{"metadataKeys":["user","team"],"operator":"all"}`, &Input{Metadata: map[string]string{"user": "u"}}, false},
		{"metadata any", "default.requiredMetadataKeys", `{"metadataKeys":["user","team"],"operator":"any"}`, &Input{Metadata: map[string]string{"user": "u"}}, true},
		{"urls valid", "default.validUrls", `{}`, text("see https://example.com/a?b=c and http://10.0.0.1:8080/x."), true},
		{"urls bad host", "default.validUrls", `{}`, text("see https://exa_mple.com/ now"), false},
		{"urls bad port", "default.validUrls", `{}`, text("see http://example.com:99999/"), false},
		{"urls none", "default.validUrls", `{}`, text("no links"), false},
		{"urls ipv6", "default.validUrls", `{}`, text("at http://[2001:db8::1]:80/"), true},
		{"schema valid", "default.jsonSchema", `{"schema":{"type":"object","required":["result"],"properties":{"confidence":{"type":"number","minimum":0,"maximum":1}}}}`, text(`{"result":"x","confidence":0.5}`), true},
		{"schema invalid", "default.jsonSchema", `{"schema":{"type":"object","properties":{"confidence":{"type":"number","maximum":1}}}}`, text(`{"confidence":2}`), false},
		{"schema not", "default.jsonSchema", `{"schema":{"type":"object"},"not":true}`, text(`{}`), false},
		{"schema no json", "default.jsonSchema", `{"schema":{"type":"object"}}`, text(`nothing here`), false},
		{"pii none", "default.pii", `{"categories":["EMAIL_ADDRESS","SSN"]}`, text("nothing personal"), true},
		{"pii found", "portkey.pii", `{"categories":["EMAIL_ADDRESS"]}`, text("mail me at a.b@example.org"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := run(t, tc.id, tc.params, tc.in)
			if v.Pass != tc.pass {
				t.Errorf("Pass = %v, want %v (%s)", v.Pass, tc.pass, v.Explanation)
			}
			if v.Explanation == "" {
				t.Error("no explanation")
			}
		})
	}
}

func TestBadParameters(t *testing.T) {
	tests := []struct {
		id, params, code, param string
	}{
		{"azure.contentSafety", `{}`, CodeUnsupportedCheck, "id"},
		{"patronus.pii", `{}`, CodeUnsupportedCheck, "id"},
		{"default.nope", ``, CodeUnsupportedCheck, "id"},
		{"default.regexMatch", `{}`, CodeInvalidParameter, "parameters.rule"},
		{"default.regexMatch", `{"rule":"(unclosed"}`, CodeInvalidParameter, "parameters.rule"},
		{"default.regexMatch", `{"rule":"a","extra":1}`, CodeInvalidParameter, "parameters.extra"},
		{"default.regexMatch", `{"rule":5}`, CodeInvalidParameter, "parameters.rule"},
		{"default.regexMatch", `[1]`, CodeInvalidParameter, "parameters"},
		{"default.contains", `{"words":[]}`, CodeInvalidParameter, "parameters.words"},
		{"default.contains", `{"words":["a"],"operator":"some"}`, CodeInvalidParameter, "parameters.operator"},
		{"default.wordCount", `{"minWords":"5"}`, CodeInvalidParameter, "parameters.minWords"},
		{"default.wordCount", `{"minWords":-1}`, CodeInvalidParameter, "parameters.minWords"},
		{"default.wordCount", `{"minWords":5,"maxWords":2}`, CodeInvalidParameter, "parameters.minWords"},
		{"default.sentenceCount", `{"maxSentence":2}`, CodeInvalidParameter, "parameters.maxSentence"},
		{"default.characterCount", `{"not":"yes"}`, CodeInvalidParameter, "parameters.not"},
		{"default.endsWith", `{}`, CodeInvalidParameter, "parameters.suffix"},
		{"default.containsCode", `{"format":"Cobol"}`, CodeInvalidParameter, "parameters.format"},
		{"default.jsonKeys", `{"keys":["a"],"operator":"most"}`, CodeInvalidParameter, "parameters.operator"},
		{"default.jsonSchema", `{}`, CodeInvalidParameter, "parameters.schema"},
		{"default.jsonSchema", `{"schema":{"$ref":"#/x"}}`, CodeInvalidParameter, "parameters.schema.$ref"},
		{"default.jsonSchema", `{"schema":{"properties":{"a":{"minimum":"x"}}}}`, CodeInvalidParameter, "parameters.schema.properties.a.minimum"},
		{"default.modelWhitelist", `{"models":[""]}`, CodeInvalidParameter, "parameters.models"},
		{"default.allowedRequestTypes", `{"allowedTypes":["chat"]}`, CodeInvalidParameter, "parameters.allowedTypes"},
		{"default.allowedRequestTypes", `{"allowedTypes":["embed"],"blockedTypes":["embed"]}`, CodeInvalidParameter, "parameters.allowedTypes"},
		{"default.requiredMetadataKeys", `{"operator":"all"}`, CodeInvalidParameter, "parameters.metadataKeys"},
		{"default.validUrls", `{"onlyDns":true}`, CodeInvalidParameter, "parameters.onlyDns"},
		{"default.webhook", `{"webhookURL":"ftp://x"}`, CodeInvalidParameter, "parameters.webhookURL"},
		{"default.webhook", `{"webhookURL":"https://x.example","timeout":0}`, CodeInvalidParameter, "parameters.timeout"},
		{"default.webhook", `{"webhookURL":"https://x.example","headers":{"Host":"y"}}`, CodeInvalidParameter, "parameters.headers"},
		{"default.webhook", `{"webhookURL":"https://x.example","headers":{"X-A":"b\r\nc"}}`, CodeInvalidParameter, "parameters.headers"},
		{"default.jwt", `{"headerKey":"Authorization"}`, CodeInvalidParameter, "parameters.jwksUri"},
		{"default.jwt", `{"jwksUri":"https://x.example/jwks","algorithms":["HS256"]}`, CodeInvalidParameter, "parameters.algorithms"},
		{"default.jwt", `{"jwksUri":"https://x.example/jwks","maxTokenAge":"1y"}`, CodeInvalidParameter, "parameters.maxTokenAge"},
		{"default.pii", `{}`, CodeInvalidParameter, "parameters.categories"},
		{"default.pii", `{"categories":["NAME"]}`, CodeInvalidParameter, "parameters.categories"},
	}
	for _, tc := range tests {
		t.Run(tc.id+" "+tc.params, func(t *testing.T) {
			_, err := NewRegistry(Env{}).New(tc.id, json.RawMessage(tc.params))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if e.Code != tc.code || e.Param != tc.param {
				t.Errorf("code, param = %q, %q, want %q, %q (%s)", e.Code, e.Param, tc.code, tc.param, e.Message)
			}
			if tc.code == CodeUnsupportedCheck && !strings.Contains(e.Message, tc.id) {
				t.Errorf("message %q does not name %s", e.Message, tc.id)
			}
		})
	}
}

func TestCompileNamesTheCheck(t *testing.T) {
	r := NewRegistry(Env{})
	_, err := r.Compile(Definition{ID: "g", Checks: []CheckDefinition{
		{ID: "default.wordCount", Parameters: json.RawMessage(`{"maxWords":3}`)},
		{ID: "default.regexMatch", Parameters: json.RawMessage(`{"rule":"("}`)},
	}})
	var e *Error
	if !errors.As(err, &e) || e.Param != "checks[1].parameters.rule" || e.Code != CodeInvalidParameter {
		t.Fatalf("err = %#v", err)
	}
	_, err = r.Compile(Definition{Checks: []CheckDefinition{{ID: "azure.pii"}}})
	if !errors.As(err, &e) || e.Param != "checks[0].id" || e.Code != CodeUnsupportedCheck {
		t.Fatalf("err = %#v", err)
	}
	if _, err = r.Compile(Definition{}); !errors.As(err, &e) || e.Param != "checks" {
		t.Fatalf("err = %#v", err)
	}
}

// fakeResolver resolves the names it holds.
type fakeResolver map[string][]string

func (f fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func TestValidURLsOnlyDNS(t *testing.T) {
	r := NewRegistry(Env{Resolver: fakeResolver{"known.example": {"192.0.2.1"}}, HTTPClient: &http.Client{}})
	c, err := r.New("default.validUrls", json.RawMessage(`{"onlyDNS":true}`))
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"go to https://known.example/x":                            true,
		"go to https://known.example/x or https://unknown.example": false,
		"literal http://192.0.2.7/ needs no lookup":                true,
	} {
		v, err := c.Check(context.Background(), &Input{Text: s})
		if err != nil || v.Pass != want {
			t.Errorf("%q: Pass = %v, %v, want %v", s, v.Pass, err, want)
		}
	}
}

func TestRequestType(t *testing.T) {
	for in, want := range map[string]string{
		"POST /chat/completions":        "chatComplete",
		"POST /embeddings/":             "embed",
		"GET /files/file-1/content":     "retrieveFileContent",
		"DELETE /files/file-1":          "deleteFile",
		"POST /batches/b1/cancel":       "cancelBatch",
		"GET /fine_tuning/jobs/ft-1":    "retrieveFinetune",
		"GET /responses/r1/input_items": "listResponseInputItems",
		"POST /messages":                "messages",
		"GET /models":                   "proxy",
	} {
		m, p, _ := strings.Cut(in, " ")
		if got := RequestType(m, p); got != want {
			t.Errorf("RequestType(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestRequiredLiterals(t *testing.T) {
	for rule, want := range map[string][]string{
		`\b(inappropriate|banned)\b`: {"inappropriate", "banned"},
		`foo\d+bar`:                  {"foo"},
		`a(bc|d)`:                    {"a"},
		`x*`:                         nil,
		`(?i)banned`:                 nil,
		`[ab]c`:                      {"c"},
		`ab|c*`:                      nil,
	} {
		got := requiredLiterals(rule)
		if strings.Join(got, ",") != strings.Join(want, ",") || (got == nil) != (want == nil) {
			t.Errorf("requiredLiterals(%q) = %q, want %q", rule, got, want)
		}
	}
}
