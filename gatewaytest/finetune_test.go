package gatewaytest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/gatewaytest"
)

// checkRules asserts the spec's state rules on a job as decoded from JSON.
func checkRules(t *testing.T, job map[string]any) {
	t.Helper()
	for _, k := range []string{"id", "created_at", "error", "fine_tuned_model", "finished_at", "hyperparameters",
		"model", "object", "organization_id", "result_files", "status", "trained_tokens", "training_file",
		"validation_file", "seed", "integrations", "estimated_finish"} {
		if _, ok := job[k]; !ok {
			t.Errorf("job lacks key %q", k)
		}
	}
	status := job["status"]
	if status == "failed" {
		e, ok := job["error"].(map[string]any)
		if !ok {
			t.Errorf("failed job has error %v", job["error"])
		}
		for _, k := range []string{"code", "message", "param"} {
			if _, ok := e[k]; !ok {
				t.Errorf("failed job's error lacks %q", k)
			}
		}
	} else if job["error"] != nil {
		t.Errorf("%v job has error %v", status, job["error"])
	}
	if status == "running" {
		for _, k := range []string{"fine_tuned_model", "finished_at", "trained_tokens"} {
			if job[k] != nil {
				t.Errorf("running job has %s = %v", k, job[k])
			}
		}
		if job["estimated_finish"] == nil {
			t.Error("running job has no estimated_finish")
		}
	} else if job["estimated_finish"] != nil {
		t.Errorf("%v job has estimated_finish %v", status, job["estimated_finish"])
	}
	if _, ok := job["result_files"].([]any); !ok {
		t.Errorf("result_files = %v, want an array", job["result_files"])
	}
}

func TestCreateJob(t *testing.T) {
	s := newServer(t)
	got := readJSON(t, do(t, s, "POST", "/fine_tuning/jobs",
		`{"model":"gpt-4o-mini","training_file":"file-abc","hyperparameters":{"n_epochs":3},"metadata":{"k":"v"}}`), 200)
	want := map[string]any{
		"id": "ftjob-000001", "object": "fine_tuning.job", "created_at": float64(gatewaytest.Epoch),
		"error": nil, "fine_tuned_model": nil, "finished_at": nil,
		"hyperparameters": map[string]any{"n_epochs": float64(3), "batch_size": "auto", "learning_rate_multiplier": "auto"},
		"model":           "gpt-4o-mini", "organization_id": "org-gatewaytest", "result_files": []any{},
		"status": "validating_files", "trained_tokens": nil, "training_file": "file-abc",
		"validation_file": nil, "integrations": nil, "seed": float64(42), "estimated_finish": nil,
		"metadata": map[string]any{"k": "v"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("created job (-want +got):\n%s", d)
	}
	checkRules(t, got)
	if again := readJSON(t, do(t, s, "GET", "/fine_tuning/jobs/ftjob-000001", ""), 200); !cmp.Equal(got, again) {
		t.Errorf("retrieved job differs from created one: %v", cmp.Diff(got, again))
	}
}

func TestCreateJobBadRequest(t *testing.T) {
	tests := []struct{ name, body, param string }{
		{"missing model", `{"training_file":"f"}`, "model"},
		{"missing training file", `{"model":"m"}`, "training_file"},
		{"n_epochs 0", `{"model":"m","training_file":"f","hyperparameters":{"n_epochs":0}}`, "hyperparameters.n_epochs"},
		{"n_epochs 51", `{"model":"m","training_file":"f","hyperparameters":{"n_epochs":51}}`, "hyperparameters.n_epochs"},
		{"n_epochs 2.5", `{"model":"m","training_file":"f","hyperparameters":{"n_epochs":2.5}}`, "hyperparameters.n_epochs"},
		{"n_epochs word", `{"model":"m","training_file":"f","hyperparameters":{"n_epochs":"many"}}`, "hyperparameters.n_epochs"},
		{"six integrations", `{"model":"m","training_file":"f","integrations":[{},{},{},{},{},{}]}`, "integrations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			e := errorOf(t, do(t, s, "POST", "/fine_tuning/jobs", tt.body), 400)
			if e["param"] != tt.param {
				t.Errorf("param = %v, want %q", e["param"], tt.param)
			}
			if _, ok := s.Job("ftjob-000001"); ok {
				t.Error("a refused request created a job")
			}
		})
	}
}

func TestJobStateMachine(t *testing.T) {
	tests := []struct {
		name  string
		steps []string
		want  map[string]any // nullable fields after the last step
	}{
		{"queued", []string{"queued"}, map[string]any{
			"status": "queued", "error": nil, "fine_tuned_model": nil, "finished_at": nil,
			"trained_tokens": nil, "estimated_finish": nil, "result_files": []any{}}},
		{"running", []string{"queued", "running"}, map[string]any{
			"status": "running", "error": nil, "fine_tuned_model": nil, "finished_at": nil,
			"trained_tokens": nil, "estimated_finish": float64(gatewaytest.Epoch + 3600), "result_files": []any{}}},
		{"succeeded", []string{"queued", "running", "succeeded"}, map[string]any{
			"status": "succeeded", "error": nil, "fine_tuned_model": "ft:gpt-4o-mini:org-gatewaytest::ftjob-000001",
			"finished_at": float64(gatewaytest.Epoch), "trained_tokens": float64(5000), "estimated_finish": nil,
			"result_files": []any{"file-000001"}}},
		{"failed while running", []string{"queued", "running", "failed"}, map[string]any{
			"status": "failed", "fine_tuned_model": nil, "finished_at": float64(gatewaytest.Epoch),
			"trained_tokens": nil, "estimated_finish": nil, "result_files": []any{},
			"error": map[string]any{"code": "invalid_training_file", "message": "The job failed due to an invalid training file.", "param": "training_file"}}},
		{"failed validating", []string{"failed"}, map[string]any{
			"status": "failed", "fine_tuned_model": nil, "finished_at": float64(gatewaytest.Epoch),
			"trained_tokens": nil, "estimated_finish": nil, "result_files": []any{},
			"error": map[string]any{"code": "invalid_training_file", "message": "The job failed due to an invalid training file.", "param": "training_file"}}},
		{"cancelled while running", []string{"queued", "running", "cancelled"}, map[string]any{
			"status": "cancelled", "error": nil, "fine_tuned_model": nil, "finished_at": nil,
			"trained_tokens": nil, "estimated_finish": nil, "result_files": []any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			job := s.AddJob(gatewaytest.FineTuningJob{Model: "gpt-4o-mini", TrainingFile: "file-train"})
			for _, st := range tt.steps {
				if err := s.SetJobStatus(job.ID, st); err != nil {
					t.Fatalf("SetJobStatus(%s): %v", st, err)
				}
				checkRules(t, readJSON(t, do(t, s, "GET", "/fine_tuning/jobs/"+job.ID, ""), 200))
			}
			got := readJSON(t, do(t, s, "GET", "/fine_tuning/jobs/"+job.ID, ""), 200)
			for k := range got {
				if _, ok := tt.want[k]; !ok {
					delete(got, k)
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("job after %v (-want +got):\n%s", tt.steps, d)
			}
		})
	}
}

func TestSucceededJobResultFileListed(t *testing.T) {
	s := newServer(t)
	job := s.AddJob(gatewaytest.FineTuningJob{Model: "m", TrainingFile: "f", Status: "running"})
	if err := s.SetJobStatus(job.ID, "succeeded"); err != nil {
		t.Fatal(err)
	}
	job, _ = s.Job(job.ID)
	f := readJSON(t, do(t, s, "GET", "/files/"+job.ResultFiles[0], ""), 200)
	if f["purpose"] != "fine-tune-results" || f["object"] != "file" {
		t.Errorf("result file = %v", f)
	}
}

func TestIllegalTransitions(t *testing.T) {
	tests := []struct{ from, to string }{
		{"validating_files", "running"},
		{"validating_files", "succeeded"},
		{"validating_files", "validating_files"},
		{"queued", "succeeded"},
		{"queued", "validating_files"},
		{"running", "queued"},
		{"succeeded", "failed"},
		{"failed", "running"},
		{"cancelled", "queued"},
		{"queued", "paused"},
	}
	for _, tt := range tests {
		t.Run(tt.from+" to "+tt.to, func(t *testing.T) {
			s := newServer(t)
			job := s.AddJob(gatewaytest.FineTuningJob{Model: "m", TrainingFile: "f", Status: tt.from})
			err := s.SetJobStatus(job.ID, tt.to)
			if err == nil || !strings.HasPrefix(err.Error(), "gatewaytest: ") {
				t.Fatalf("err = %v, want a gatewaytest error", err)
			}
			if after, _ := s.Job(job.ID); !cmp.Equal(job, after) {
				t.Errorf("refused transition changed the job: %s", cmp.Diff(job, after))
			}
		})
	}
	t.Run("unknown job", func(t *testing.T) {
		s := newServer(t)
		if err := s.SetJobStatus("ftjob-nope", "queued"); err == nil {
			t.Error("no error for an unknown job")
		}
	})
}

func TestFailJob(t *testing.T) {
	s := newServer(t)
	job := s.AddJob(gatewaytest.FineTuningJob{Model: "m", TrainingFile: "f"})
	if err := s.FailJob(job.ID, gatewaytest.FineTuningError{Code: "quota", Message: "out of quota"}); err != nil {
		t.Fatal(err)
	}
	got := readJSON(t, do(t, s, "GET", "/fine_tuning/jobs/"+job.ID, ""), 200)
	checkRules(t, got)
	if d := cmp.Diff(map[string]any{"code": "quota", "message": "out of quota", "param": nil}, got["error"]); d != "" {
		t.Errorf("error (-want +got):\n%s", d)
	}
	if err := s.FailJob(job.ID, gatewaytest.FineTuningError{Code: "again"}); err == nil {
		t.Error("failing a failed job gave no error")
	}
}

func TestCancelJob(t *testing.T) {
	s := newServer(t)
	job := s.AddJob(gatewaytest.FineTuningJob{Model: "m", TrainingFile: "f", Status: "queued"})
	got := readJSON(t, do(t, s, "POST", "/fine_tuning/jobs/"+job.ID+"/cancel", ""), 200)
	if got["status"] != "cancelled" {
		t.Errorf("status = %v", got["status"])
	}
	checkRules(t, got)
	e := errorOf(t, do(t, s, "POST", "/fine_tuning/jobs/"+job.ID+"/cancel", ""), 400)
	if e["type"] != "invalid_request_error" {
		t.Errorf("error = %v", e)
	}
	errorOf(t, do(t, s, "POST", "/fine_tuning/jobs/ftjob-nope/cancel", ""), 404)
}

func TestJobNotFound(t *testing.T) {
	s := newServer(t)
	e := errorOf(t, do(t, s, "GET", "/fine_tuning/jobs/ftjob-nope", ""), 404)
	if e["param"] != "fine_tuning_job_id" || e["code"] != "not_found" {
		t.Errorf("error = %v", e)
	}
}

func TestListJobs(t *testing.T) {
	s := newServer(t)
	for range 5 {
		s.AddJob(gatewaytest.FineTuningJob{Model: "m", TrainingFile: "f"})
	}
	tests := []struct {
		query   string
		ids     []any
		hasMore bool
	}{
		{"", []any{"ftjob-000005", "ftjob-000004", "ftjob-000003", "ftjob-000002", "ftjob-000001"}, false},
		{"?limit=2", []any{"ftjob-000005", "ftjob-000004"}, true},
		{"?limit=2&after=ftjob-000004", []any{"ftjob-000003", "ftjob-000002"}, true},
		{"?limit=2&after=ftjob-000002", []any{"ftjob-000001"}, false},
		{"?limit=5", []any{"ftjob-000005", "ftjob-000004", "ftjob-000003", "ftjob-000002", "ftjob-000001"}, false},
		{"?limit=4", []any{"ftjob-000005", "ftjob-000004", "ftjob-000003", "ftjob-000002"}, true},
		{"?limit=100", []any{"ftjob-000005", "ftjob-000004", "ftjob-000003", "ftjob-000002", "ftjob-000001"}, false},
		{"?after=ftjob-000001", []any{}, false},
		{"?after=ftjob-unknown", []any{}, false},
		{"?after=", []any{"ftjob-000005", "ftjob-000004", "ftjob-000003", "ftjob-000002", "ftjob-000001"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got := readJSON(t, do(t, s, "GET", "/fine_tuning/jobs"+tt.query, ""), 200)
			ids := []any{}
			for _, j := range got["data"].([]any) {
				checkRules(t, j.(map[string]any))
				ids = append(ids, j.(map[string]any)["id"])
			}
			if d := cmp.Diff(tt.ids, ids); d != "" {
				t.Errorf("ids (-want +got):\n%s", d)
			}
			if got["has_more"] != tt.hasMore || got["object"] != "list" {
				t.Errorf("has_more = %v object = %v, want %v list", got["has_more"], got["object"], tt.hasMore)
			}
		})
	}
}

func TestListJobsDefaultLimit(t *testing.T) {
	s := newServer(t)
	for range 21 {
		s.AddJob(gatewaytest.FineTuningJob{Model: "m", TrainingFile: "f"})
	}
	got := readJSON(t, do(t, s, "GET", "/fine_tuning/jobs", ""), 200)
	data := got["data"].([]any)
	if len(data) != 20 || got["has_more"] != true {
		t.Errorf("got %d jobs, has_more %v; want 20, true", len(data), got["has_more"])
	}
	if id := data[0].(map[string]any)["id"]; id != "ftjob-000021" {
		t.Errorf("first job = %v, want the newest", id)
	}
}

func TestListJobsBadLimit(t *testing.T) {
	for _, limit := range []string{"0", "-1", "x", "1.5", "", "99999999999999999999"} {
		t.Run(fmt.Sprintf("%q", limit), func(t *testing.T) {
			s := newServer(t)
			e := errorOf(t, do(t, s, "GET", "/fine_tuning/jobs?limit="+limit, ""), 400)
			if e["param"] != "limit" || e["type"] != "invalid_request_error" {
				t.Errorf("error = %v", e)
			}
		})
	}
}

func TestAddJob(t *testing.T) {
	s := newServer(t)
	vf := "file-val"
	job := s.AddJob(gatewaytest.FineTuningJob{ID: "ftjob-custom", Model: "m", TrainingFile: "f", ValidationFile: &vf, CreatedAt: 7})
	want := gatewaytest.FineTuningJob{
		ID: "ftjob-custom", Object: "fine_tuning.job", CreatedAt: 7, Model: "m", TrainingFile: "f",
		ValidationFile: &vf, OrganizationID: "org-gatewaytest", Status: "validating_files",
		ResultFiles: []string{}, Hyperparameters: gatewaytest.Hyperparameters{NEpochs: "auto"},
	}
	if d := cmp.Diff(want, job); d != "" {
		t.Errorf("AddJob (-want +got):\n%s", d)
	}
	// The stored job is a copy.
	vf = "changed"
	job.ResultFiles = append(job.ResultFiles, "x")
	stored, ok := s.Job("ftjob-custom")
	if !ok || *stored.ValidationFile != "file-val" || len(stored.ResultFiles) != 0 {
		t.Errorf("stored job shares memory with the caller: %+v", stored)
	}
	defer func() {
		if recover() == nil {
			t.Error("AddJob with a duplicate id did not panic")
		}
	}()
	s.AddJob(gatewaytest.FineTuningJob{ID: "ftjob-custom"})
}

func TestJobsConcurrent(t *testing.T) {
	s := newServer(t)
	const n = 10
	done := make(chan struct{})
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			res, err := http.Post(s.URL+"/fine_tuning/jobs", "application/json", strings.NewReader(`{"model":"m","training_file":"f"}`))
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
		}()
		go func() {
			defer func() { done <- struct{}{} }()
			res, err := http.Get(s.URL + "/fine_tuning/jobs?limit=3")
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
		}()
	}
	for range 2 * n {
		<-done
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("ftjob-%06d", i)
		if err := s.SetJobStatus(id, "queued"); err != nil {
			t.Errorf("job %s: %v", id, err)
		}
	}
}
