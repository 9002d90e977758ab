package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, config, msg string
	}{
		{"not JSON", `{`, "invalid JSON: unexpected EOF"},
		{"not an object", `[]`, "invalid JSON: must be an object"},
		{"trailing data", `{} {}`, "trailing data after the JSON object"},
		{"unknown field", `{"targets":[{"wieght":1}]}`, `invalid JSON: targets[0]: unknown field "wieght"`},
		{"wrong type", `{"request_timeout":"10"}`, "invalid JSON: request_timeout: must be an integer"},
		{"unknown mode", `{"strategy":{"mode":"random"}}`, "strategy.mode: must be single, fallback, loadbalance or conditional"},
		{"negative weight", `{"strategy":{"mode":"loadbalance"},"targets":[{"provider":"openai"},{"provider":"openai","weight":-1}]}`, "targets[1].weight: must be ≥ 0"},
		{"all weights zero", `{"strategy":{"mode":"loadbalance"},"targets":[{"weight":0},{"weight":0}]}`, "targets: weights must not all be 0"},
		{"nested weights zero", `{"targets":[{"strategy":{"mode":"loadbalance"},"targets":[{"weight":0}]}]}`, "targets[0].targets: weights must not all be 0"},
		{"too many retries", `{"targets":[{},{"retry":{"attempts":6}}]}`, "targets[1].retry.attempts: must be 0 to 5"},
		{"negative retries", `{"retry":{"attempts":-1}}`, "retry.attempts: must be 0 to 5"},
		{"bad retry status", `{"retry":{"attempts":1,"on_status_codes":[429,1000]}}`, "retry.on_status_codes[1]: must be an HTTP status code"},
		{"bad fallback status", `{"strategy":{"mode":"fallback","on_status_codes":[0]},"targets":[{}]}`, "strategy.on_status_codes[0]: must be an HTTP status code"},
		{"negative timeout", `{"request_timeout":-5}`, "request_timeout: must be a positive number of milliseconds, at most 3600000"},
		{"cache mode", `{"cache":{"mode":"semantic"}}`, "cache.mode: must be simple"},
		{"cache max_age", `{"cache":{"mode":"simple","max_age":-1}}`, "cache.max_age: must be 0 to 31536000 seconds"},
		{"conditional without targets", `{"strategy":{"mode":"conditional","default":"a"},"provider":"openai"}`, "targets: must not be empty for strategy mode conditional"},
		{"nested conditional with empty targets", `{"targets":[{"strategy":{"mode":"conditional"},"targets":[]}]}`, "targets[0].targets: must not be empty for strategy mode conditional"},
		{"weights overflow", `{"strategy":{"mode":"loadbalance"},"targets":[{"weight":1e308},{"weight":1e308}]}`, "targets: weights must sum to a finite number"},
		{"nested weights overflow", `{"targets":[{"strategy":{"mode":"loadbalance"},"targets":[{"weight":1.7e308},{"weight":0},{"weight":1.7e308}]}]}`, "targets[0].targets: weights must sum to a finite number"},
		{"virtual key with key pair", `{"virtual_key":"v","access_key_id":"AKID"}`, "access_key_id: cannot be combined with virtual_key, which holds its credential"},
		{"child api key under virtual key", `{"targets":[{"virtual_key":"v","targets":[{},{"api_key":"k"}]}]}`, "targets[0].targets[1].api_key: cannot be combined with virtual_key inherited from targets[0]"},
		{"grandchild api key under top virtual key", `{"virtual_key":"v","targets":[{"targets":[{"api_key":"k"}]}]}`, "targets[0].targets[0].api_key: cannot be combined with virtual_key inherited from the top level"},
		{"child custom host under virtual key", `{"virtual_key":"v","targets":[{"custom_host":"https://x.example"}]}`, "targets[0].custom_host: cannot be combined with virtual_key inherited from the top level"},
		{"child secret under virtual key", `{"virtual_key":"v","targets":[{"secret_access_key":"s"}]}`, "targets[0].secret_access_key: cannot be combined with virtual_key inherited from the top level"},
		{"child session token under virtual key", `{"targets":[{"virtual_key":"v","targets":[{"region":"eu","session_token":"t"}]}]}`, "targets[0].targets[0].session_token: cannot be combined with virtual_key inherited from targets[0]"},
		{"virtual key with custom host", `{"virtual_key":"v","custom_host":"https://x.example"}`, "custom_host: cannot be combined with virtual_key: a stored credential only goes to its own host"},
		{"virtual key with provider", `{"targets":[{"virtual_key":"v","provider":"openai"}]}`, "targets[0].provider: cannot be combined with virtual_key, which names its provider"},
		{"virtual key with api key", `{"virtual_key":"v","api_key":"k"}`, "api_key: cannot be combined with virtual_key, which holds its credential"},
		{"custom host not http", `{"provider":"openai","custom_host":"ftp://x.example"}`, "custom_host: must be an absolute http(s) URL without credentials"},
		{"custom host with credentials", `{"provider":"openai","custom_host":"https://u:p@x.example"}`, "custom_host: must be an absolute http(s) URL without credentials"},
		{"forward header refused", `{"forward_headers":["x-trace","Authorization"]}`, "forward_headers[1]: is not a header name that may be forwarded"},
		{"forward header list", `{"forward_headers":["a,b"]}`, "forward_headers[0]: is not a header name that may be forwarded"},
		{"null target", `{"targets":[null]}`, "targets[0]: must be an object"},
		{"duplicate names", `{"targets":[{"name":"a"},{"name":"a"}]}`, "targets[1].name: duplicates the name of an earlier target"},
		{"conditions outside conditional", `{"strategy":{"mode":"fallback","default":"a"},"targets":[{"name":"a"}]}`, "strategy.conditions: are only for strategy mode conditional"},
		{"conditional without conditions", `{"strategy":{"mode":"conditional"},"targets":[{"name":"a"}]}`, "strategy.conditions: must not be empty for strategy mode conditional"},
		{"then names nothing", `{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":"1"},"then":"b"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].then: must name a target of this config"},
		{"default names nothing", `{"strategy":{"mode":"conditional","default":"b"},"targets":[{"name":"a"}]}`, "strategy.default: must name a target of this config"},
		{"empty query", `{"strategy":{"mode":"conditional","conditions":[{"query":{},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query: must be a non-empty object"},
		{"unknown field prefix", `{"strategy":{"mode":"conditional","conditions":[{"query":{"user":"1"},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.user: field must be metadata.<key> or params.<field>"},
		{"unknown operator", `{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":{"$like":"x"}},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.metadata.a.$like: unknown operator; use $eq $ne $gt $gte $lt $lte $in $nin $regex"},
		{"unknown top operator", `{"strategy":{"mode":"conditional","conditions":[{"query":{"$not":{}},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.$not: unknown operator; use $and or $or, or a metadata.* or params.* field"},
		{"operators mixed with keys", `{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata._user":{"$in":["a"],"typo":1}},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.metadata._user: cannot mix operators ($in) with other keys"},
		{"operators mixed in $or", `{"strategy":{"mode":"conditional","conditions":[{"query":{"$or":[{"metadata.a":"1"},{"params.n":{"$gt":1,"$lt":5,"lt":9}}]},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.$or[1].params.n: cannot mix operators ($gt, $lt) with other keys"},
		{"unknown operator in $and", `{"strategy":{"mode":"conditional","conditions":[{"query":{"$and":[{"params.n":{"$exists":true}}]},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.$and[0].params.n.$exists: unknown operator; use $eq $ne $gt $gte $lt $lte $in $nin $regex"},
		{"$in needs an array", `{"strategy":{"mode":"conditional","conditions":[{"query":{"params.model":{"$in":"x"}},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.params.model.$in: must be an array"},
		{"$gt needs a number", `{"strategy":{"mode":"conditional","conditions":[{"query":{"params.n":{"$gt":[1]}},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.params.n.$gt: must be a number or a string"},
		{"bad regex", `{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":{"$regex":"("}},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.metadata.a.$regex: must be a valid regular expression (RE2 syntax)"},
		{"long regex", `{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":{"$regex":"` + strings.Repeat("a", 1025) + `"}},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.metadata.a.$regex: must be a regular expression of at most 1024 bytes"},
		{"$or needs queries", `{"strategy":{"mode":"conditional","conditions":[{"query":{"$or":[]},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.$or: must be a non-empty array of queries"},
		{"$and item", `{"strategy":{"mode":"conditional","conditions":[{"query":{"$and":[{"metadata.a":"1"},3]},"then":"a"}]},"targets":[{"name":"a"}]}`, "strategy.conditions[0].query.$and[1]: must be a query object"},
		{"operand out of range", `{"strategy":{"mode":"conditional","conditions":[{"query":{"params.n":1e999},"then":"a"}]},"targets":[{"name":"a"}]}`, `strategy.conditions[0].query.params.n: number "1e999" is out of range`},
		{"too deep", strings.Repeat(`{"targets":[`, 10) + `{}` + strings.Repeat(`]}`, 10), "targets[0].targets[0].targets[0].targets[0].targets[0].targets[0].targets[0].targets[0].targets[0]: targets nest more than 8 levels deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.config))
			var ge *Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			// Param is empty: ParseConfig does not know where the JSON
			// came from, and the gateway names the header itself.
			want := &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidConfig, Message: "invalid config: " + tt.msg}
			if d := cmp.Diff(want, ge); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
		})
	}
}

// TestParseConfigAccepts checks routing configs that must parse.
func TestParseConfigAccepts(t *testing.T) {
	for _, c := range []string{
		`{}`,
		`{"provider":"openai","api_key":"sk"}`,
		`{"virtual_key":"openai-prod","cache":{"mode":"simple","max_age":3600}}`,
		`{"strategy":{"mode":"single"},"targets":[{"name":"a"}]}`,
		`{"strategy":{"mode":""},"targets":[{"name":"a"}]}`,
		`{"strategy":{"mode":"loadbalance"},"targets":[{"weight":0},{"weight":0.5}]}`,
		`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata._user":{"$eq":"vip"}},"then":"big"}],"default":"small"},
		  "targets":[{"name":"big","virtual_key":"openai-prod","weight":0.7,"override_params":{"model":"gpt-4o"},"retry":{"attempts":2},"targets":[]},{"name":"small"}],
		  "provider":"openai","api_key":"k","custom_host":"https://h.example/v1","cache":{"mode":"simple","max_age":3600},
		  "retry":{"attempts":3,"on_status_codes":[429,500,502,503,504],"use_retry_after_header":true},
		  "request_timeout":10000,"forward_headers":["x-trace"],"override_params":{"temperature":0}}`,
		`{"strategy":{"mode":"conditional","conditions":[{"query":{"$or":[{"params.n":{"$gte":1,"$lt":3}},{"metadata.x":{"$in":["a",1,true,null]}}]},"then":"a"}]},"targets":[{"name":"a"}]}`,
		`{"resource_name":"r","deployment_id":"d","api_version":"2024-02-01","provider":"azure-openai"}`,
		// the server's sample config: without targets a config is the single
		// target of its own top level, whatever the mode.
		`{"strategy":{"mode":"fallback"},"targets":[]}`,
		`{"strategy":{"mode":"loadbalance"}}`,
		`{"strategy":{"mode":"fallback","on_status_codes":[503]},"provider":"openai","api_key":"sk"}`,
		`{"targets":[{"strategy":{"mode":"loadbalance"},"virtual_key":"v","targets":[]}]}`,
		// A target naming its own provider or virtual key replaces the
		// inherited virtual key, credential and host as a unit.
		`{"virtual_key":"v","targets":[{"provider":"openai","api_key":"k","custom_host":"https://x.example"},{"virtual_key":"w"}]}`,
		`{"virtual_key":"v","targets":[{"provider":"bedrock","access_key_id":"AKID","secret_access_key":"s","region":"eu-west-1"}]}`,
		// Settings that carry no credential may sit under a virtual key.
		`{"virtual_key":"v","targets":[{"region":"eu-west-1","api_version":"v1","retry":{"attempts":1}}]}`,
		// An object without operators is a value compared for equality.
		`{"strategy":{"mode":"conditional","conditions":[{"query":{"params.response_format":{"type":"json_object"}},"then":"a"}]},"targets":[{"name":"a"}]}`,
		`{"strategy":{"mode":"loadbalance"},"targets":[{"weight":1e308},{"weight":0}]}`,
	} {
		if _, err := ParseConfig([]byte(c)); err != nil {
			t.Errorf("ParseConfig(%s): %v", c, err)
		}
	}
}

// configOpts compares configs as the gateway reads them: an empty list or
// map means the same as none.
var configOpts = cmp.Options{cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(Condition{})}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"virtual_key":"v","retry":{"attempts":2,"on_status_codes":[429]},"cache":{"mode":"simple","max_age":60}}`,
		`{"strategy":{"mode":"fallback","on_status_codes":[503]},"targets":[{"provider":"openai","api_key":"k","custom_host":"http://h.example"},{"virtual_key":"b","weight":0}]}`,
		`{"strategy":{"mode":"loadbalance"},"targets":[{"weight":3,"override_params":{"model":"m","seed":12345678901234567890,"x":[1.5,{"y":null}]}},{"weight":1e-3}]}`,
		`{"strategy":{"mode":"conditional","conditions":[{"query":{"$and":[{"metadata._user":{"$regex":"^v"}},{"params.max_tokens":{"$gt":100}}]},"then":"a"}],"default":"b"},"targets":[{"name":"a"},{"name":"b","targets":[]}]}`,
		`{"request_timeout":1000,"forward_headers":["X-Trace"],"override_params":{},"resource_name":"r","region":"eu"}`,
		`{"targets":[{"targets":[{"targets":[{"name":"\u003c\ud83d\ude00"}]}]}]}`,
		`{"strategy":{"mode":"fallback"},"targets":[]}`,
		`{"virtual_key":"v","targets":[{"targets":[{"api_key":"k"}]},{"provider":"openai","api_key":"k"}]}`,
		`{"strategy":{"mode":"loadbalance"},"targets":[{"weight":1e308},{"weight":1e308}]}`,
		`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata._user":{"$in":["a"],"typo":1}},"then":"a"}]},"targets":[{"name":"a"}]}`,
		`{"strategy":{"mode":"fallback","cb_config":{"failure_threshold":3,"cooldown_interval":5000,"failure_status_codes":[500,429]}},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`,
		`{"strategy":{"mode":"loadbalance","sticky":{"key":"metadata.session"},"cb_config":{"failure_threshold":1,"cooldown_interval":1000}},"targets":[{"virtual_key":"a","weight":3},{"strategy":{"mode":"loadbalance","sticky":{"key":"header.x-session"}},"targets":[{"virtual_key":"b"}]}]}`,
		`{"strategy":{"mode":"fallback","sticky":{"key":"header.bad name"},"cb_config":{"failure_threshold":0,"cooldown_interval":999}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			var ge *Error
			if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || ge.Code != CodeInvalidConfig {
				t.Fatalf("error %v is not a 400 invalid_config", err)
			}
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := ParseConfig(out)
		if err != nil {
			t.Fatalf("re-marshalled config %s is refused: %v", out, err)
		}
		if d := cmp.Diff(c, again, configOpts); d != "" {
			t.Fatalf("re-marshalled config differs (-first +again):\n%s", d)
		}
	})
}

// BenchmarkConfigResolution measures what a request with a saved config id
// pays to find its parsed config ("parse-cache": no parse, no allocation
// once warm) and to build its routing plan from it ("plan").
func BenchmarkConfigResolution(b *testing.B) {
	st := &testStore{}
	st.AddVirtualKey(VirtualKey{Slug: "a", Provider: "openai", APIKey: "sk-a", BaseURL: "https://a.example/v1"})
	st.AddVirtualKey(VirtualKey{Slug: "b", Provider: "openai", APIKey: "sk-b", BaseURL: "https://b.example/v1"})
	st.AddConfig(SavedConfig{ID: "pc-1", Config: json.RawMessage(`{"strategy":{"mode":"fallback"},"retry":{"attempts":2},
		"targets":[{"virtual_key":"a","override_params":{"model":"gpt-4o"}},{"virtual_key":"b"}]}`)})
	g := New(Options{Keys: st, VirtualKeys: st, Configs: st})
	defer g.Close()
	ctx := context.Background()
	id := Identity{KeyID: "k", WorkspaceID: "ws"}
	b.Run("parse-cache", func(b *testing.B) {
		if _, err := g.savedConfig(ctx, id, "pc-1"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.savedConfig(ctx, id, "pc-1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plan", func(b *testing.B) {
		o := &RequestOptions{Config: "pc-1"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.selectPlan(ctx, id, o); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestSavedConfigResolutionAllocs(t *testing.T) {
	st := &testStore{}
	st.AddConfig(SavedConfig{ID: "pc-1", Config: json.RawMessage(`{"virtual_key":"a","retry":{"attempts":1}}`)})
	g := New(Options{Configs: st})
	defer g.Close()
	ctx := context.Background()
	first, err := g.savedConfig(ctx, Identity{}, "pc-1")
	if err != nil {
		t.Fatal(err)
	}
	var again *Config
	if n := testing.AllocsPerRun(100, func() { again, _ = g.savedConfig(ctx, Identity{}, "pc-1") }); n != 0 {
		t.Errorf("a warm saved config costs %v allocations, want 0", n)
	}
	if again != first {
		t.Error("the saved config was parsed again")
	}
	st.AddConfig(SavedConfig{ID: "pc-1", Config: json.RawMessage(`{"virtual_key":"b"}`)})
	if c, err := g.savedConfig(ctx, Identity{}, "pc-1"); err != nil || c.VirtualKey != "b" {
		t.Errorf("after the stored config changed: %+v, %v; want the new config", c, err)
	}
}

// TestSavedConfigCacheBounded: parsed saved configs are reused while their
// JSON is unchanged, reparsed when it changes, and held up to
// maxSavedConfigs, so ids that come and go do not pile up.
func TestSavedConfigCacheBounded(t *testing.T) {
	g := New(Options{})
	sc := &SavedConfig{ID: "pc-0", Config: []byte(`{"provider":"openai","api_key":"sk-1"}`)}
	first, err := g.savedConfigs.parse(sc)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := g.savedConfigs.parse(sc); again != first {
		t.Error("an unchanged saved config was parsed again")
	}
	sc.Config = []byte(`{"provider":"openai","api_key":"sk-2"}`)
	if changed, _ := g.savedConfigs.parse(sc); changed == first {
		t.Error("a changed saved config was served from the cache")
	}
	for i := range maxSavedConfigs + 100 {
		if _, err := g.savedConfigs.parse(&SavedConfig{ID: "pc-" + strconv.Itoa(i), Config: sc.Config}); err != nil {
			t.Fatal(err)
		}
	}
	if n := g.savedConfigs.lru.Len(); n != maxSavedConfigs {
		t.Errorf("%d parsed configs held, want %d", n, maxSavedConfigs)
	}
}

// TestInlineConfigCacheBounded: parsed inline configs are kept for reuse
// only up to maxCachedInlineConfig bytes of JSON each.
func TestInlineConfigCacheBounded(t *testing.T) {
	e := newCoreEnv(t, newCoreUpstream(t, nil), nil)
	small := `{"virtual_key":"vk-up"}`
	large := `{"virtual_key":"vk-up","override_params":{"user":"` + strings.Repeat("x", maxCachedInlineConfig) + `"}}`
	for _, cfg := range []string{small, large} {
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`), "x-gateway-api-key: "+coreKey, "x-gateway-config: "+cfg)
		if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 {
			t.Fatalf("status %d: %s", res.StatusCode, b)
		}
	}
	if n := e.gw.inlineConfigs.Len(); n != 1 {
		t.Errorf("%d parsed inline configs kept, want 1 (the small one)", n)
	}
}
