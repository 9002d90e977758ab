package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Reference fine-tuning jobs, one per status, in the shape of
// openai-schemas.yaml and the spec.
var jobDocs = map[string]string{
	"validating_files": `{"object":"fine_tuning.job","id":"ftjob-1","model":"davinci-002","created_at":1692661014,
		"finished_at":null,"fine_tuned_model":null,"organization_id":"org-123","result_files":[],"status":"validating_files",
		"validation_file":null,"training_file":"file-abc123","hyperparameters":{"n_epochs":"auto"},"trained_tokens":null,
		"error":null,"seed":42,"integrations":null,"estimated_finish":null}`,
	"queued": `{"object":"fine_tuning.job","id":"ftjob-2","model":"davinci-002","created_at":1692661014,
		"finished_at":null,"fine_tuned_model":null,"organization_id":"org-123","result_files":[],"status":"queued",
		"validation_file":"file-val","training_file":"file-abc123","hyperparameters":{"n_epochs":4,"batch_size":"auto","learning_rate_multiplier":1.8},
		"trained_tokens":null,"error":null,"seed":7}`,
	"running": `{"object":"fine_tuning.job","id":"ftjob-3","model":"gpt-4o-mini","created_at":1692661014,
		"finished_at":null,"fine_tuned_model":null,"organization_id":"org-123","result_files":[],"status":"running",
		"validation_file":null,"training_file":"file-abc123","hyperparameters":{"n_epochs":1},"trained_tokens":null,
		"error":null,"seed":0,"estimated_finish":1692662000,
		"integrations":[{"type":"tracker","tracker":{"project":"my-project","name":null,"entity":"team","tags":["custom-tag"]}}],
		"method":{"type":"supervised","supervised":{"hyperparameters":{"n_epochs":1}}},"metadata":{"k":"v"}}`,
	"succeeded": `{"object":"fine_tuning.job","id":"ftjob-4","model":"davinci-002","created_at":1692661014,
		"finished_at":1692661645,"fine_tuned_model":"ft:davinci-002:my-org:custom_suffix:7q8mpxmy","organization_id":"org-123",
		"result_files":["file-abc123"],"status":"succeeded","validation_file":null,"training_file":"file-abc123",
		"hyperparameters":{"n_epochs":50},"trained_tokens":5768,"error":null,"seed":1,"user_provided_suffix":"custom_suffix"}`,
	"failed": `{"object":"fine_tuning.job","id":"ftjob-5","model":"davinci-002","created_at":1692661014,
		"finished_at":1692661645,"fine_tuned_model":null,"organization_id":"org-123","result_files":[],"status":"failed",
		"validation_file":null,"training_file":"file-abc123","hyperparameters":{"n_epochs":"auto"},"trained_tokens":null,
		"error":{"code":"invalid_training_file","message":"The file has too few examples.","param":"training_file"},"seed":1,
		"integrations":[]}`,
	"cancelled": `{"object":"fine_tuning.job","id":"ftjob-6","model":"davinci-002","created_at":1692661014,
		"finished_at":null,"fine_tuned_model":null,"organization_id":"org-123","result_files":[],"status":"cancelled",
		"validation_file":null,"training_file":"file-abc123","hyperparameters":{},"trained_tokens":null,"error":null,"seed":1,
		"estimated_finish":null}`,
}

func TestFineTuningJobRoundTrip(t *testing.T) {
	for name, doc := range jobDocs {
		t.Run(name, func(t *testing.T) {
			var j FineTuningJob
			if err := json.Unmarshal([]byte(doc), &j); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if err := j.Validate(); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
			if string(j.Status) != name {
				t.Errorf("Status = %q", j.Status)
			}
			out, err := json.Marshal(j)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			typedSameJSON(t, out, []byte(doc))
		})
	}
}

func TestFineTuningJobFields(t *testing.T) {
	var j FineTuningJob
	if err := json.Unmarshal([]byte(jobDocs["running"]), &j); err != nil {
		t.Fatal(err)
	}
	est, entity := int64(1692662000), "team"
	n, fixed := j.Hyperparameters.NEpochs.Fixed()
	got := []any{j.ID, j.Status, j.EstimatedFinish != nil && *j.EstimatedFinish == est, n, fixed,
		len(j.Integrations), j.Integrations[0].Tracker.Project, *j.Integrations[0].Tracker.Entity == entity,
		j.Integrations[0].Tracker.Name == nil, string(j.Extra["metadata"])}
	want := []any{"ftjob-3", StatusRunning, true, 1, true, 1, "my-project", true, true, `{"k":"v"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded fields (-want +got):\n%s", diff)
	}

	// A job built in Go writes every required member, nulls included.
	out, err := json.Marshal(FineTuningJob{ID: "ftjob-x", Status: StatusQueued, Hyperparameters: Hyperparameters{NEpochs: AutoEpochs()}})
	if err != nil {
		t.Fatal(err)
	}
	typedSameJSON(t, out, []byte(`{"id":"ftjob-x","created_at":0,"error":null,"fine_tuned_model":null,"finished_at":null,
		"hyperparameters":{"n_epochs":"auto"},"model":"","object":"fine_tuning.job","organization_id":"","result_files":[],
		"status":"queued","trained_tokens":null,"training_file":"","validation_file":null,"seed":0}`))
}

// typedJob returns the reference job of a status, decoded, after edit.
func typedJob(t *testing.T, status string, edit func(*FineTuningJob)) FineTuningJob {
	t.Helper()
	var j FineTuningJob
	if err := json.Unmarshal([]byte(jobDocs[status]), &j); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&j)
	}
	return j
}

func TestFineTuningJobValidate(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	str := func(s string) *string { return &s }
	tracker := func(n int) []TrackerIntegration {
		out := make([]TrackerIntegration, n)
		for i := range out {
			out[i] = TrackerIntegration{Type: IntegrationTracker, Tracker: Tracker{Project: "p"}}
		}
		return out
	}
	tests := []struct {
		name   string
		status string
		edit   func(*FineTuningJob)
		param  string
	}{
		{"unknown status", "queued", func(j *FineTuningJob) { j.Status = "paused" }, "status"},
		{"empty status", "queued", func(j *FineTuningJob) { j.Status = "" }, "status"},
		{"wrong object", "queued", func(j *FineTuningJob) { j.Object = "fine_tuning.job.event" }, "object"},
		{"failed without error", "failed", func(j *FineTuningJob) { j.Error = nil }, "error"},
		{"failed without code", "failed", func(j *FineTuningJob) { j.Error.Code = "" }, "error.code"},
		{"failed without message", "failed", func(j *FineTuningJob) { j.Error.Message = "" }, "error.message"},
		{"failed with null param", "failed", func(j *FineTuningJob) { j.Error.Param = nil }, ""},
		{"running with model", "running", func(j *FineTuningJob) { j.FineTunedModel = str("ft:x") }, "fine_tuned_model"},
		{"running with finished_at", "running", func(j *FineTuningJob) { j.FinishedAt = i64(1) }, "finished_at"},
		{"running with trained_tokens", "running", func(j *FineTuningJob) { j.TrainedTokens = i64(1) }, "trained_tokens"},
		{"running without estimate", "running", func(j *FineTuningJob) { j.EstimatedFinish = nil }, ""},
		{"succeeded with estimate", "succeeded", func(j *FineTuningJob) { j.EstimatedFinish = i64(1) }, "estimated_finish"},
		{"queued with estimate", "queued", func(j *FineTuningJob) { j.EstimatedFinish = i64(1) }, "estimated_finish"},
		{"n_epochs low edge", "queued", func(j *FineTuningJob) { j.Hyperparameters.NEpochs = Epochs(1) }, ""},
		{"n_epochs below", "queued", func(j *FineTuningJob) { j.Hyperparameters.NEpochs = Epochs(0) }, "hyperparameters.n_epochs"},
		{"n_epochs high edge", "queued", func(j *FineTuningJob) { j.Hyperparameters.NEpochs = Epochs(50) }, ""},
		{"n_epochs above", "queued", func(j *FineTuningJob) { j.Hyperparameters.NEpochs = Epochs(51) }, "hyperparameters.n_epochs"},
		{"n_epochs auto", "queued", func(j *FineTuningJob) { j.Hyperparameters.NEpochs = AutoEpochs() }, ""},
		{"five integrations", "queued", func(j *FineTuningJob) { j.Integrations = tracker(5) }, ""},
		{"six integrations", "queued", func(j *FineTuningJob) { j.Integrations = tracker(6) }, "integrations"},
		{"integration of another type", "queued", func(j *FineTuningJob) {
			j.Integrations = tracker(2)
			j.Integrations[1].Type = "wandb"
		}, "integrations[1].type"},
		{"integration without project", "queued", func(j *FineTuningJob) {
			j.Integrations = tracker(1)
			j.Integrations[0].Tracker.Project = ""
		}, "integrations[0].tracker.project"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := typedJob(t, tt.status, tt.edit)
			err := j.Validate()
			if tt.param == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Param != tt.param || e.Status != http.StatusBadRequest {
				t.Errorf("Validate() = %v, want a 400 *Error with param %q", err, tt.param)
			}
		})
	}
}

func TestFineTuningJobValidateDecoded(t *testing.T) {
	// Rules that depend on what the provider wrote, not only on values.
	tests := []struct {
		name, from, to string
		param          string
	}{
		{"failed error without param member",
			`"param":"training_file"`, `"other":1`, "error.param"},
		{"unknown status from a provider",
			`"status":"failed"`, `"status":"exploded"`, "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(jobDocs["failed"], tt.from, tt.to, 1)
			var j FineTuningJob
			if err := json.Unmarshal([]byte(doc), &j); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := typedParam(j.Validate()); got != tt.param {
				t.Errorf("Validate() param = %q, want %q", got, tt.param)
			}
			out, _ := json.Marshal(j)
			typedSameJSON(t, out, []byte(doc)) // still lossless
		})
	}
}

func TestNEpochsJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    NEpochs
		wantErr bool
	}{
		{`"auto"`, AutoEpochs(), false},
		{`1`, Epochs(1), false},
		{`50`, Epochs(50), false},
		{`0`, Epochs(0), false}, // decodes; Validate refuses it
		{`"AUTO"`, NEpochs{}, true},
		{`2.5`, NEpochs{}, true},
		{`true`, NEpochs{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var h Hyperparameters
			err := json.Unmarshal([]byte(`{"n_epochs":`+tt.in+`}`), &h)
			if (err != nil) != tt.wantErr {
				t.Fatalf("decode %s: err %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if h.NEpochs != tt.want {
				t.Errorf("NEpochs = %v, want %v", h.NEpochs, tt.want)
			}
			out, _ := json.Marshal(h)
			typedSameJSON(t, out, []byte(`{"n_epochs":`+tt.in+`}`))
		})
	}
}

// TestHyperparametersNEpochsRequired: n_epochs is required by the schema,
// so a job built in Go without it is written with "auto", its default; a
// document that lacked it is still written back as it was.
func TestHyperparametersNEpochsRequired(t *testing.T) {
	out, err := json.Marshal(Hyperparameters{})
	if err != nil {
		t.Fatal(err)
	}
	typedSameJSON(t, out, []byte(`{"n_epochs":"auto"}`))
	var h Hyperparameters
	if err := json.Unmarshal([]byte(`{"batch_size":4}`), &h); err != nil {
		t.Fatal(err)
	}
	out, _ = json.Marshal(h)
	typedSameJSON(t, out, []byte(`{"batch_size":4}`))
}

var fileListDoc = `{"object":"list","has_more":false,"first_id":"file-abc123","last_id":"file-abc456","data":[
	{"id":"file-abc123","object":"file","bytes":175,"created_at":1613677385,"expires_at":1677614202,"filename":"salesOverview.pdf","purpose":"assistants","status":"uploaded"},
	{"id":"file-abc456","object":"file","bytes":140,"created_at":1613779121,"filename":"puppy.jsonl","purpose":"fine-tune","status":"processed","status_details":""}]}`

func TestFileListRoundTrip(t *testing.T) {
	var l FileList
	if err := json.Unmarshal([]byte(fileListDoc), &l); err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	if len(l.Data) != 2 || l.Data[0].Purpose != "assistants" || l.Data[1].Bytes != 140 {
		t.Errorf("decoded %+v", l)
	}
	out, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	typedSameJSON(t, out, []byte(fileListDoc))

	out, _ = json.Marshal(FileList{})
	typedSameJSON(t, out, []byte(`{"object":"list","data":[]}`))
	bad := FileList{Data: []File{{}, {Object: "upload"}}}
	if got := typedParam(bad.Validate()); got != "data[1].object" {
		t.Errorf("Validate of a non-file: param %q", got)
	}
}

func TestFineTuningJobListRoundTrip(t *testing.T) {
	doc := `{"object":"list","has_more":true,"data":[` + jobDocs["queued"] + `,` + jobDocs["failed"] + `]}`
	var l FineTuningJobList
	if err := json.Unmarshal([]byte(doc), &l); err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	out, _ := json.Marshal(l)
	typedSameJSON(t, out, []byte(doc))

	l.Data[1].Status = "weird"
	if got := typedParam(l.Validate()); got != "data[1].status" {
		t.Errorf("Validate with an unknown status: param %q", got)
	}
}

func TestServeFineTuningJobs(t *testing.T) {
	page := `{"object":"list","data":[],"has_more":false}`
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, page)
	})
	env := newCoreEnv(t, up, nil)
	tests := []struct {
		query  string
		status int
		param  string
	}{
		{"", 200, ""},
		{"limit=1", 200, ""},
		{"after=ftjob-1&limit=20", 200, ""},
		{"after=&limit=", 400, "limit"},
		{"after=", 200, ""},
		{"limit=0", 400, "limit"},
		{"limit=-1", 400, "limit"},
		{"limit=abc", 400, "limit"},
		{"limit=1.5", 400, "limit"},
		{"limit=%2B3", 400, "limit"},
		{"limit=+3", 400, "limit"},
		{"limit=99999999999999999999", 400, "limit"},
		{"limit=2&limit=3", 400, "limit"},
		{"after=a&after=b", 400, "after"},
		{"limit=%zz", 400, "<null>"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			before := len(up.received())
			res := env.do(http.MethodGet, "/v1/fine_tuning/jobs?"+tt.query, nil, typedHeaders...)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if tt.status == http.StatusOK {
				got, _ := io.ReadAll(res.Body)
				rec := up.received()
				if string(got) != page || len(rec) != before+1 || rec[len(rec)-1].Query != tt.query || rec[len(rec)-1].Path != "/v1/fine_tuning/jobs" {
					t.Errorf("body %s, provider saw %+v; want the query forwarded and the page unchanged", got, rec[before:])
				}
				return
			}
			if e := decodeError(t, res); deref(e.Error.Param) != tt.param || e.Error.Type != TypeInvalidRequest {
				t.Errorf("error %+v, want param %s", e.Error, tt.param)
			}
			if len(up.received()) != before {
				t.Errorf("a refused request reached the provider")
			}
		})
	}
}

func TestServeFineTuningJobAndFiles(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/fine_tuning/jobs/"):
			io.WriteString(w, jobDocs["succeeded"])
		case r.Method == http.MethodGet && r.URL.Path == "/v1/files":
			io.WriteString(w, fileListDoc)
		default:
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"created":true}`)
		}
	})
	env := newCoreEnv(t, up, nil)
	last := func() coreReceived { r := up.received(); return r[len(r)-1] }

	res := env.do(http.MethodGet, "/v1/fine_tuning/jobs/ftjob-4", nil, typedHeaders...)
	if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || string(b) != jobDocs["succeeded"] {
		t.Errorf("retrieve: status %d body %s", res.StatusCode, b)
	}
	res = env.do(http.MethodGet, "/v1/fine_tuning/jobs/ft%2Fodd", nil, typedHeaders...)
	io.Copy(io.Discard, res.Body)
	if got := last(); got.RawPath != "/v1/fine_tuning/jobs/ft%2Fodd" {
		t.Errorf("escaped id reached the provider as %q (raw %q)", got.Path, got.RawPath)
	}

	res = env.do(http.MethodGet, "/v1/files?purpose=fine-tune", nil, typedHeaders...)
	if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || string(b) != fileListDoc || last().Query != "purpose=fine-tune" {
		t.Errorf("files: status %d body %s query %q", res.StatusCode, b, last().Query)
	}
	res = env.do(http.MethodGet, "/v1/files?purpose=a&purpose=b", nil, typedHeaders...)
	if e := decodeError(t, res); res.StatusCode != 400 || deref(e.Error.Param) != "purpose" {
		t.Errorf("repeated purpose: status %d param %s", res.StatusCode, deref(e.Error.Param))
	}

	// Other methods on the typed paths are pass-through (the HTTP contract).
	for _, p := range []string{"/v1/fine_tuning/jobs", "/v1/files", "/v1/fine_tuning/jobs/ftjob-4"} {
		res := env.do(http.MethodPost, p+"?limit=0", strings.NewReader(`{"x":1}`), typedHeaders...)
		io.Copy(io.Discard, res.Body)
		if got := last(); res.StatusCode != http.StatusCreated || got.Method != http.MethodPost || got.Path != p {
			t.Errorf("POST %s: status %d, provider saw %s %s", p, res.StatusCode, got.Method, got.Path)
		}
	}
}

func TestValidateLimit(t *testing.T) {
	for _, tt := range []struct {
		v  string
		ok bool
	}{{"1", true}, {"0", false}, {"20", true}, {"01", true}, {"", false}, {" 1", false}, {"9223372036854775807", true}, {"9223372036854775808", false}} {
		if err := validateLimit(tt.v); (err == nil) != tt.ok {
			t.Errorf("validateLimit(%q) = %v, want ok %v", tt.v, err, tt.ok)
		}
	}
	if _, err := url.ParseQuery("limit=%zz"); err == nil {
		t.Fatal("url.ParseQuery accepts a bad escape; the malformed-query case above tests nothing")
	}
}
