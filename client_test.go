package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modelgateway/gateway/gatewaytest"
)

// typedCaller selects the coreEnv's virtual key with its member key.
var typedCaller = Caller{APIKey: coreKey, VirtualKey: "vk-up"}

func TestCreateCompletion(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.Header.Get("Authorization"), "sk-stored-secret") {
			io.WriteString(w, completionDocs[4].doc)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"bad key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
	})
	env := newCoreEnv(t, up, nil)
	ctx := context.Background()

	max := 5
	req := &CompletionRequest{Model: "gpt-3.5-turbo-instruct", Prompt: TextPrompt("hi"), MaxTokens: &max}
	var hdr http.Header
	got, err := env.gw.CreateCompletion(ctx, req, typedCaller, Caller{TraceID: "in-process-1", Metadata: map[string]string{"_user": "u1"}},
		CallHeader("X-Ignored-By-Provider", "1"), ResponseHeader(&hdr))
	if err != nil {
		t.Fatalf("CreateCompletion: %v", err)
	}
	want := typedDecode[Completion](t, completionDocs[4].doc)
	if diff := cmp.Diff(want, *got, cmp.AllowUnexported()); diff != "" {
		t.Errorf("completion (-want +got):\n%s", diff)
	}
	if hdr.Get(HeaderTraceID) != "in-process-1" || hdr.Get(HeaderProvider) != "openai" {
		t.Errorf("response headers %v, want the trace id and provider", hdr)
	}
	rec := up.received()
	sent := typedDecode[CompletionRequest](t, rec[len(rec)-1].Body)
	if diff := cmp.Diff(*req, sent, cmp.AllowUnexported()); diff != "" || rec[len(rec)-1].Path != "/v1/completions" {
		t.Errorf("provider got %s %s, want the request (-want +got):\n%s", rec[len(rec)-1].Path, rec[len(rec)-1].Body, diff)
	}

	// The in-process call is logged like an HTTP one.
	env.gw.Close()
	logs := env.logs.Query(LogFilter{TraceID: "in-process-1"})
	if len(logs) != 1 || logs[0].Model != req.Model || logs[0].KeyID != "key-member" || logs[0].Metadata["_user"] != "u1" {
		t.Errorf("logs %+v, want one record with the model, key and metadata", logs)
	}
}

func typedDecode[T any](t *testing.T, doc string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	return v
}

func TestClientErrors(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
	})
	env := newCoreEnv(t, up, nil)
	ctx := context.Background()
	two := 2
	stream := true

	tests := []struct {
		name string
		call func() error
		want Error
	}{
		{"gateway validation", func() error {
			_, err := env.gw.CreateCompletion(ctx, &CompletionRequest{Model: "m", N: new(int)}, typedCaller)
			return err
		}, Error{Status: 400, Type: TypeInvalidRequest, Code: CodeInvalidValue, Param: "n"}},
		{"best_of with stream", func() error {
			for _, err := range env.gw.StreamCompletion(ctx, &CompletionRequest{Model: "m", BestOf: &two}, typedCaller) {
				return err
			}
			return nil
		}, Error{Status: 400, Type: TypeInvalidRequest, Code: CodeInvalidValue, Param: "best_of"}},
		{"limit zero", func() error {
			_, err := env.gw.ListFineTuningJobs(ctx, "", -1, typedCaller)
			return err
		}, Error{Status: 400, Type: TypeInvalidRequest, Code: CodeInvalidValue, Param: "limit"}},
		{"no API key", func() error {
			_, err := env.gw.ListFiles(ctx, "", Caller{VirtualKey: "vk-up"})
			return err
		}, Error{Status: 401, Type: TypeInvalidRequest, Code: CodeMissingAPIKey}},
		{"no provider", func() error {
			_, err := env.gw.FineTuningJob(ctx, "ftjob-1", Caller{APIKey: coreKey})
			return err
		}, Error{Status: 400, Type: TypeInvalidRequest, Code: CodeMissingProvider}},
		{"provider error", func() error {
			_, err := env.gw.FineTuningJob(ctx, "ftjob-1", typedCaller)
			return err
		}, Error{Status: 429, Type: "requests", Code: "rate_limit_exceeded", RetryAfter: 3e9}},
		{"provider error on a stream", func() error {
			for _, err := range env.gw.StreamCompletion(ctx, &CompletionRequest{Model: "m"}, typedCaller) {
				return err
			}
			return nil
		}, Error{Status: 429, Type: "requests", Code: "rate_limit_exceeded", RetryAfter: 3e9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v, want an *Error", err)
			}
			got := *e
			got.Message, got.Err = "", nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if e.Message == "" {
				t.Error("the error has no message")
			}
		})
	}

	if _, err := env.gw.CreateCompletion(ctx, &CompletionRequest{Model: "m", Stream: &stream}, typedCaller); err == nil {
		t.Error("CreateCompletion accepted a streaming request")
	}
}

// TestStreamCompletionIncremental proves that the in-process client holds
// each event before the provider sends the next one.
func TestStreamCompletionIncremental(t *testing.T) {
	next := make(chan struct{})
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"text\":\"%d\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, `data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	})
	env := newCoreEnv(t, up, nil)
	yes := true
	req := &CompletionRequest{Model: "m", Prompt: TextPrompt("p"), StreamOptions: &StreamOptions{IncludeUsage: &yes}}
	var texts []string
	var usage *CompletionUsage
	for c, err := range env.gw.StreamCompletion(context.Background(), req, typedCaller) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if len(c.Choices) == 0 {
			usage = c.Usage
			continue
		}
		texts = append(texts, c.Choices[0].Text)
		next <- struct{}{} // the provider waits for this before the next event
	}
	if diff := cmp.Diff([]string{"0", "1", "2"}, texts); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if usage == nil || usage.TotalTokens != 4 {
		t.Errorf("usage %+v, want the final usage event", usage)
	}
	if req.Stream != nil {
		t.Error("StreamCompletion modified the caller's request")
	}
	rec := up.received()
	if body := rec[len(rec)-1].Body; !strings.Contains(body, `"stream":true`) || rec[len(rec)-1].Header.Get("Accept") != "text/event-stream" {
		t.Errorf("provider got %s, want stream true", body)
	}
}

func TestStreamCompletionStopEarly(t *testing.T) {
	gone := make(chan struct{})
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"text":"a","index":0,"logprobs":null,"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // never ends on its own
		close(gone)
	})
	env := newCoreEnv(t, up, nil)
	n := 0
	for _, err := range env.gw.StreamCompletion(context.Background(), &CompletionRequest{Model: "m"}, typedCaller) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	<-gone // the provider saw the call end
	if n != 1 {
		t.Errorf("got %d events", n)
	}
}

func TestStreamCompletionCut(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[]}`+"\n\n")
		// ends without [DONE]
	})
	env := newCoreEnv(t, up, nil)
	var errs []error
	for _, err := range env.gw.StreamCompletion(context.Background(), &CompletionRequest{Model: "m"}, typedCaller) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) != 1 || !errors.Is(errs[0], io.ErrUnexpectedEOF) {
		t.Errorf("errors %v, want one wrapping io.ErrUnexpectedEOF", errs)
	}
}

// typedJobsProvider serves n fine-tuning jobs with cursor pagination, and
// files, like a provider.
func typedJobsProvider(t *testing.T, n int, status string) *coreUpstream {
	return newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/fine_tuning/jobs":
			limit := 20
			if v := r.URL.Query().Get("limit"); v != "" {
				limit, _ = strconv.Atoi(v)
			}
			start := 0
			if a := r.URL.Query().Get("after"); a != "" {
				start, _ = strconv.Atoi(strings.TrimPrefix(a, "ftjob-"))
			}
			var data []string
			for i := start + 1; i <= n && len(data) < limit; i++ {
				data = append(data, strings.Replace(strings.Replace(jobDocs["queued"], `"ftjob-2"`, `"ftjob-`+strconv.Itoa(i)+`"`, 1), `"status":"queued"`, `"status":"`+status+`"`, 1))
			}
			more := start+len(data) < n
			fmt.Fprintf(w, `{"object":"list","data":[%s],"has_more":%t}`, strings.Join(data, ","), more)
		case strings.HasPrefix(r.URL.Path, "/v1/fine_tuning/jobs/"):
			io.WriteString(w, strings.Replace(jobDocs["queued"], `"status":"queued"`, `"status":"`+status+`"`, 1))
		case r.URL.Path == "/v1/files":
			fmt.Fprintf(w, `{"object":"list","data":[{"id":"file-1","object":"file","bytes":1,"created_at":1,"filename":"a.jsonl","purpose":%q,"status":"uploaded"}]}`,
				r.URL.Query().Get("purpose"))
		default:
			http.NotFound(w, r)
		}
	})
}

func TestFineTuningClient(t *testing.T) {
	up := typedJobsProvider(t, 5, "queued")
	env := newCoreEnv(t, up, nil)
	ctx := context.Background()

	page, err := env.gw.ListFineTuningJobs(ctx, "ftjob-1", 2, typedCaller)
	if err != nil {
		t.Fatal(err)
	}
	if ids := typedIDs(page.Data); !cmp.Equal(ids, []string{"ftjob-2", "ftjob-3"}) || !page.HasMore {
		t.Errorf("page %v has_more %v, want ftjob-2, ftjob-3 and more", ids, page.HasMore)
	}
	var all []string
	for j, err := range env.gw.FineTuningJobs(ctx, 2, typedCaller) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, j.ID)
	}
	if want := []string{"ftjob-1", "ftjob-2", "ftjob-3", "ftjob-4", "ftjob-5"}; !cmp.Equal(all, want) {
		t.Errorf("auto-paging got %v, want %v", all, want)
	}
	job, err := env.gw.FineTuningJob(ctx, "ftjob-2", typedCaller)
	if err != nil || job.ID != "ftjob-2" || job.Status != StatusQueued {
		t.Errorf("FineTuningJob = %+v, %v", job, err)
	}
	files, err := env.gw.ListFiles(ctx, "fine-tune", typedCaller)
	if err != nil || len(files.Data) != 1 || files.Data[0].Purpose != "fine-tune" {
		t.Errorf("ListFiles = %+v, %v", files, err)
	}
	rec := up.received()
	if q := rec[len(rec)-1].Query; q != "purpose=fine-tune" {
		t.Errorf("files query %q", q)
	}
}

func TestFineTuningClientInvalidJob(t *testing.T) {
	up := typedJobsProvider(t, 1, "exploded")
	env := newCoreEnv(t, up, nil)
	ctx := context.Background()
	_, err := env.gw.FineTuningJob(ctx, "ftjob-2", typedCaller)
	if !errors.Is(err, ErrInvalidResponse) || typedParam(err) != "status" {
		t.Errorf("unknown status: error %v, want ErrInvalidResponse naming status", err)
	}
	_, err = env.gw.ListFineTuningJobs(ctx, "", 0, typedCaller)
	if !errors.Is(err, ErrInvalidResponse) || typedParam(err) != "data[0].status" {
		t.Errorf("unknown status in a list: error %v", err)
	}
}

func typedIDs(jobs []FineTuningJob) []string {
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

// TestClientAgainstGatewaytest runs the in-process client against the
// package's own fake provider: every job state it produces passes
// FineTuningJob.Validate, and its JSON survives a round trip through the
// typed values.
func TestClientAgainstGatewaytest(t *testing.T) {
	fake := gatewaytest.NewServer()
	t.Cleanup(fake.Close)
	store := &testStore{}
	store.AddAPIKey(APIKey{ID: "key-1", Digest: HashAPIKey(coreKey), WorkspaceID: "ws-1"})
	store.AddVirtualKey(VirtualKey{Slug: "fake", Provider: ProviderOpenAI, APIKey: "sk-fake", BaseURL: fake.URL, WorkspaceID: "ws-1"})
	gw := New(Options{Keys: store, VirtualKeys: store})
	t.Cleanup(func() { gw.Close() })
	caller := Caller{APIKey: coreKey, VirtualKey: "fake"}
	ctx := context.Background()

	var ids []string
	for range 6 {
		ids = append(ids, fake.AddJob(gatewaytest.FineTuningJob{Model: "gpt-4o-mini", TrainingFile: "file-t"}).ID)
	}
	steps := map[string][]string{
		ids[0]: {"queued", "running"},
		ids[1]: {"queued", "running", "succeeded"},
		ids[2]: {"failed"},
		ids[3]: {"queued", "cancelled"},
		ids[4]: {"queued"},
	}
	for id, path := range steps {
		for _, st := range path {
			if err := fake.SetJobStatus(id, st); err != nil {
				t.Fatal(err)
			}
		}
	}
	statuses := map[string]FineTuningJobStatus{}
	for j, err := range gw.FineTuningJobs(ctx, 2, caller) {
		if err != nil {
			t.Fatalf("listing (every job is validated): %v", err)
		}
		statuses[j.ID] = j.Status
		raw, _ := fake.Job(j.ID)
		want, _ := json.Marshal(raw)
		got, _ := json.Marshal(j)
		typedSameJSON(t, got, want)
	}
	want := map[string]FineTuningJobStatus{ids[0]: StatusRunning, ids[1]: StatusSucceeded, ids[2]: StatusFailed,
		ids[3]: StatusCancelled, ids[4]: StatusQueued, ids[5]: StatusValidatingFiles}
	if diff := cmp.Diff(want, statuses); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	failed, err := gw.FineTuningJob(ctx, ids[2], caller)
	if err != nil || failed.Error == nil || failed.Error.Code == "" || failed.Error.Param == nil {
		t.Errorf("failed job %+v, %v: want its error with code and param", failed, err)
	}

	fake.AddFile(gatewaytest.File{Filename: "a.jsonl", Purpose: "fine-tune", Bytes: 10})
	fake.AddFile(gatewaytest.File{Filename: "b.pdf", Purpose: "assistants", Bytes: 20})
	files, err := gw.ListFiles(ctx, "assistants", caller)
	if err != nil || len(files.Data) != 1 || files.Data[0].Filename != "b.pdf" {
		t.Errorf("ListFiles(assistants) = %+v, %v", files, err)
	}

	gate := fake.HoldStream("/v1/completions", 1)
	defer gate.Release()
	var text strings.Builder
	held := false
	for c, err := range gw.StreamCompletion(ctx, &CompletionRequest{Model: "gpt-3.5-turbo-instruct", Prompt: TextPrompt("hello there")}, caller) {
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Text)
		}
		if !held {
			<-gate.Held() // the first event arrived while the rest was held
			gate.Release()
			held = true
		}
	}
	if got, want := text.String(), gatewaytest.CompletionText("hello there"); got != want {
		t.Errorf("streamed %q, want %q", got, want)
	}
}

// TestClientAnswerBounded: the in-process client holds at most
// Options.MaxBodyBytes of a provider's answer, however much the provider
// sends; a successful answer over it is an error wrapping
// ErrInvalidResponse, and the provider sees the call end.
func TestClientAnswerBounded(t *testing.T) {
	const limit = 4096
	pad := strings.Repeat("x", 8<<20) // 8 MiB in one string member
	ended := make(chan string, 8)
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		defer func() { ended <- r.URL.Path }()
		switch r.URL.Path {
		case "/v1/files":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[],"pad":"`+pad+`"}`)
		case "/v1/completions":
			if strings.Contains(r.URL.RawQuery, "sse") {
				// One event whose data is split over many short lines.
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[],"pad":[`+"\n")
				for range 1 << 14 {
					io.WriteString(w, `data: "`+strings.Repeat("x", 512)+`",`+"\n")
				}
				io.WriteString(w, "data: \"\"]}\n\ndata: [DONE]\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[],"pad":"`+pad+`"}`)
		}
	})
	env := newCoreEnv(t, up, func(o *Options) { o.MaxBodyBytes = limit })
	ctx := context.Background()

	t.Run("one object", func(t *testing.T) {
		if _, err := env.gw.ListFiles(ctx, "", typedCaller); !errors.Is(err, ErrInvalidResponse) {
			t.Errorf("ListFiles of an 8 MiB answer: %v, want ErrInvalidResponse", err)
		}
		<-ended
	})
	t.Run("stream answered with one object", func(t *testing.T) {
		var errs []error
		for _, err := range env.gw.StreamCompletion(ctx, &CompletionRequest{Model: "m"}, typedCaller) {
			errs = append(errs, err)
		}
		if len(errs) != 1 || !errors.Is(errs[0], ErrInvalidResponse) {
			t.Errorf("errors %v, want one wrapping ErrInvalidResponse", errs)
		}
		<-ended
	})
	t.Run("event of many data lines", func(t *testing.T) {
		var errs []error
		for _, err := range env.gw.StreamCompletion(ctx, &CompletionRequest{Model: "m"}, typedCaller, CallHeader("X-Unused", "1"), callQuery("sse")) {
			errs = append(errs, err)
		}
		if len(errs) != 1 || !errors.Is(errs[0], ErrInvalidResponse) {
			t.Errorf("errors %v, want one wrapping ErrInvalidResponse", errs)
		}
		<-ended
	})
}

// callQuery is a CallOption that sets the raw query of the call, to tell
// the fake provider which answer to give.
type callQuery string

func (q callQuery) applyCall(c *call) { c.req.URL.RawQuery = string(q) }

// TestFineTuningJobsCursorStuck: a provider that answers has_more with the
// same last job forever ends the iteration with an error instead of
// looping on it.
func TestFineTuningJobsCursorStuck(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[%s],"has_more":true}`, jobDocs["queued"])
	})
	env := newCoreEnv(t, up, nil)
	var jobs, errs int
	for _, err := range env.gw.FineTuningJobs(context.Background(), 1, typedCaller) {
		if err != nil {
			errs++
			continue
		}
		if jobs++; jobs > 10 {
			t.Fatal("the iteration follows a cursor that does not move")
		}
	}
	if jobs != 1 || errs != 1 {
		t.Errorf("%d jobs and %d errors, want the job once then one error", jobs, errs)
	}
}
