package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/gatewaytest"
)

// buildServer builds examples/server from this working tree into a
// temporary directory and returns the binary's path.
func buildServer(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build examples/server: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "server")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.Command(goTool, "build", "-o", bin, "github.com/modelgateway/gateway/examples/server")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build examples/server: %v\n%s", err, out)
	}
	return bin
}

// startServer runs the binary with a config file and returns its base URL,
// once it announces "gateway: listening on http://ADDR". The process is
// interrupted and waited for at cleanup.
func startServer(t *testing.T, bin string, config any) string {
	t.Helper()
	cfg, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gateway.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-config", path, "-drain", "0s", "-grace", "5s")
	cmd.Dir = t.TempDir()   // where its default database, gateway.db, goes
	cmd.Stdout = io.Discard // one JSON line per request
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		wg.Wait()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	var log strings.Builder // guarded by wg: read only after Wait
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if u, ok := strings.CutPrefix(line, "gateway: listening on "); ok {
				addr <- u
			}
		}
		close(addr)
	}()
	u, ok := <-addr
	if !ok {
		wg.Wait()
		t.Fatalf("the server exited before listening:\n%s", log.String())
	}
	go func() {
		for range addr { // drain: the scanner goroutine never blocks
		}
	}()
	return u
}

// e2eEnv is a running examples/server in front of a gatewaytest fake
// provider, and an official OpenAI SDK client pointed at it.
type e2eEnv struct {
	fake   *gatewaytest.Server
	base   string // the gateway's base URL, without /v1
	key    string
	client openai.Client
}

func newEnv(t *testing.T) *e2eEnv {
	t.Helper()
	fake := gatewaytest.NewServer()
	t.Cleanup(fake.Close)
	providerToken := "sk-fake-" + rand.Text()
	fake.RequireToken(providerToken)
	key := "gw-e2e-" + rand.Text()
	digest := gateway.HashAPIKey(key)
	base := startServer(t, buildServer(t), map[string]any{
		// The key is stored as its digest, as a production config would.
		"api_keys": []map[string]any{{"id": "key-e2e", "key_sha256": hex.EncodeToString(digest[:]), "workspace_id": "ws-1", "role": "member"}},
		"virtual_keys": []map[string]any{{"slug": "fake-openai", "provider": "openai", "api_key": providerToken,
			"base_url": fake.URL, "workspace_id": "ws-1"}},
	})
	e := &e2eEnv{fake: fake, base: base, key: key}
	e.client = e.sdk()
	return e
}

// sdk returns an OpenAI client for the gateway with the env's headers plus
// opts. The SDK's own API key is a dummy: the virtual key names the
// provider credential, and the gateway drops the caller's Authorization.
func (e *e2eEnv) sdk(opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(e.base + "/v1/"),
		option.WithAPIKey("sk-not-used"),
		option.WithHeader("x-gateway-api-key", e.key),
		option.WithHeader("x-gateway-virtual-key", "fake-openai"),
		option.WithMaxRetries(0),
	}
	return openai.NewClient(append(base, opts...)...)
}

// apiError asserts err is the SDK's *openai.Error and returns it.
func apiError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *openai.Error", err, err)
	}
	return e
}

func TestOpenAISDK(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	t.Run("completion", func(t *testing.T) {
		c, err := e.client.Completions.New(ctx, openai.CompletionNewParams{
			Model:     "gpt-3.5-turbo-instruct",
			Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Say this is a test")},
			MaxTokens: openai.Int(64),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Choices) != 1 || c.Choices[0].Text != gatewaytest.CompletionText("Say this is a test") || c.Object != "text_completion" {
			t.Errorf("completion %+v", c)
		}
	})

	t.Run("streamed completion", func(t *testing.T) {
		gate := e.fake.HoldStream("/v1/completions", 1)
		defer gate.Release()
		s := e.client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
			Model:  "gpt-3.5-turbo-instruct",
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("stream me please")},
		})
		defer s.Close()
		var text strings.Builder
		first := true
		for s.Next() {
			for _, ch := range s.Current().Choices {
				text.WriteString(ch.Text)
			}
			if first {
				// The provider holds the rest of the stream until released:
				// this event came through the gateway on its own.
				<-gate.Held()
				gate.Release()
				first = false
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if got, want := text.String(), gatewaytest.CompletionText("stream me please"); got != want {
			t.Errorf("streamed text %q, want %q", got, want)
		}
	})

	t.Run("gateway 400s reach the SDK as *openai.Error", func(t *testing.T) {
		tests := []struct {
			name  string
			call  func() error
			param string
		}{
			{"best_of with stream", func() error {
				s := e.client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
					Model: "gpt-3.5-turbo-instruct", BestOf: openai.Int(2),
					Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")},
				})
				defer s.Close()
				for s.Next() {
				}
				return s.Err()
			}, "best_of"},
			{"n above 128", func() error {
				_, err := e.client.Completions.New(ctx, openai.CompletionNewParams{
					Model: "gpt-3.5-turbo-instruct", N: openai.Int(129),
					Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")},
				})
				return err
			}, "n"},
			{"five stop sequences", func() error {
				_, err := e.client.Completions.New(ctx, openai.CompletionNewParams{
					Model:  "gpt-3.5-turbo-instruct",
					Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")},
					Stop:   openai.CompletionNewParamsStopUnion{OfStringArray: []string{"a", "b", "c", "d", "e"}},
				})
				return err
			}, "stop"},
			{"limit zero", func() error {
				_, err := e.client.FineTuning.Jobs.List(ctx, openai.FineTuningJobListParams{Limit: openai.Int(0)})
				return err
			}, "limit"},
		}
		before := e.fake.Count("/v1/completions") + e.fake.Count("/v1/fine_tuning/jobs")
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ae := apiError(t, tt.call())
				got := []any{ae.StatusCode, ae.Type, ae.Param}
				if want := []any{400, "invalid_request_error", tt.param}; !cmp.Equal(got, want) {
					t.Errorf("status, type, param = %v, want %v (message %q)", got, want, ae.Message)
				}
			})
		}
		if after := e.fake.Count("/v1/completions") + e.fake.Count("/v1/fine_tuning/jobs"); after != before {
			t.Errorf("%d refused requests reached the provider", after-before)
		}
	})

	t.Run("gateway 401", func(t *testing.T) {
		c := e.sdk(option.WithHeader("x-gateway-api-key", "gw-wrong"))
		_, err := c.Files.List(ctx, openai.FileListParams{})
		if ae := apiError(t, err); ae.StatusCode != 401 || ae.Code != "invalid_api_key" {
			t.Errorf("status %d code %q, want 401 invalid_api_key", ae.StatusCode, ae.Code)
		}
	})

	t.Run("files by purpose", func(t *testing.T) {
		want := map[string][]string{}
		for i, purpose := range []openai.FilePurpose{openai.FilePurposeFineTune, openai.FilePurposeAssistants, openai.FilePurposeFineTune} {
			f, err := e.client.Files.New(ctx, openai.FileNewParams{
				File:    openai.File(strings.NewReader(`{"prompt":"a","completion":"b"}`+"\n"), "train"+string(rune('0'+i))+".jsonl", "application/jsonl"),
				Purpose: purpose,
			})
			if err != nil {
				t.Fatalf("upload through the gateway (pass-through): %v", err)
			}
			want[string(purpose)] = append(want[string(purpose)], f.ID)
		}
		for purpose, ids := range want {
			page, err := e.client.Files.List(ctx, openai.FileListParams{Purpose: openai.String(purpose)})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range page.Data {
				if f.Purpose != openai.FileObjectPurpose(purpose) {
					t.Errorf("file %s has purpose %q in a list for %q", f.ID, f.Purpose, purpose)
				}
				got = append(got, f.ID)
			}
			if !cmp.Equal(sortedCopy(got), sortedCopy(ids)) {
				t.Errorf("files for %s: %v, want %v", purpose, got, ids)
			}
		}
	})

	t.Run("fine-tuning jobs", func(t *testing.T) {
		var created []string
		for range 5 {
			j, err := e.client.FineTuning.Jobs.New(ctx, openai.FineTuningJobNewParams{
				Model: "gpt-4o-mini-2024-07-18", TrainingFile: "file-train",
			})
			if err != nil {
				t.Fatalf("create through the gateway (pass-through): %v", err)
			}
			created = append(created, j.ID)
		}

		j, err := e.client.FineTuning.Jobs.Get(ctx, created[2])
		if err != nil {
			t.Fatal(err)
		}
		if j.ID != created[2] || j.Object != "fine_tuning.job" {
			t.Errorf("retrieved %s (%s), want %s", j.ID, j.Object, created[2])
		}

		page, err := e.client.FineTuning.Jobs.List(ctx, openai.FineTuningJobListParams{Limit: openai.Int(2)})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 2 || !page.HasMore {
			t.Fatalf("first page: %d jobs, has_more %v; want 2 and more", len(page.Data), page.HasMore)
		}
		next, err := e.client.FineTuning.Jobs.List(ctx, openai.FineTuningJobListParams{Limit: openai.Int(2), After: openai.String(page.Data[1].ID)})
		if err != nil {
			t.Fatal(err)
		}
		if len(next.Data) != 2 || next.Data[0].ID == page.Data[0].ID || next.Data[0].ID == page.Data[1].ID {
			t.Errorf("page after %s: %v", page.Data[1].ID, jobIDs(next.Data))
		}

		var all []string
		pager := e.client.FineTuning.Jobs.ListAutoPaging(ctx, openai.FineTuningJobListParams{Limit: openai.Int(2)})
		for pager.Next() {
			all = append(all, pager.Current().ID)
		}
		if err := pager.Err(); err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(sortedCopy(all), sortedCopy(created)) {
			t.Errorf("auto-paging listed %v, want the created jobs %v", all, created)
		}

		// The states the spec's rules are about, as the SDK reads them
		// through the gateway.
		if err := e.fake.SetJobStatus(created[0], "queued"); err != nil {
			t.Fatal(err)
		}
		if err := e.fake.SetJobStatus(created[0], "running"); err != nil {
			t.Fatal(err)
		}
		run, err := e.client.FineTuning.Jobs.Get(ctx, created[0])
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != "running" || run.FineTunedModel != "" || run.JSON.FinishedAt.Valid() || run.JSON.TrainedTokens.Valid() || !run.JSON.EstimatedFinish.Valid() {
			t.Errorf("running job: status %s, fine_tuned_model %q, finished_at set %v, trained_tokens set %v, estimated_finish set %v",
				run.Status, run.FineTunedModel, run.JSON.FinishedAt.Valid(), run.JSON.TrainedTokens.Valid(), run.JSON.EstimatedFinish.Valid())
		}
		if err := e.fake.FailJob(created[1], gatewaytest.FineTuningError{Code: "invalid_validation_file", Message: "bad file", Param: openai.StringPtr("validation_file")}); err != nil {
			t.Fatal(err)
		}
		failed, err := e.client.FineTuning.Jobs.Get(ctx, created[1])
		if err != nil {
			t.Fatal(err)
		}
		if got := []string{string(failed.Status), failed.Error.Code, failed.Error.Param}; !cmp.Equal(got, []string{"failed", "invalid_validation_file", "validation_file"}) {
			t.Errorf("failed job: %v", got)
		}

		reqs := e.fake.Requests()
		var queries []string
		for _, r := range reqs {
			if r.Method == "GET" && r.Path == "/v1/fine_tuning/jobs" {
				queries = append(queries, r.RawQuery)
			}
		}
		if len(queries) < 4 || !strings.Contains(strings.Join(queries, " "), "after=") {
			t.Errorf("provider saw list queries %v, want the cursor forwarded", queries)
		}
	})
}

func jobIDs(jobs []openai.FineTuningJob) []string {
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
