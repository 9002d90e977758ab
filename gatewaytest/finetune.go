package gatewaytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Fine-tuning job statuses and the transitions SetJobStatus allows. A
// terminal status (succeeded, failed, cancelled) allows none.
var jobTransitions = map[string][]string{
	"validating_files": {"queued", "failed", "cancelled"},
	"queued":           {"running", "failed", "cancelled"},
	"running":          {"succeeded", "failed", "cancelled"},
	"succeeded":        nil,
	"failed":           nil,
	"cancelled":        nil,
}

const (
	// organizationID owns every job the server creates.
	organizationID = "org-gatewaytest"
	// defaultSeed is the seed of a created job whose request names none.
	defaultSeed = 42
	// trainedTokens is the token count of every job that succeeds.
	trainedTokens = 5000
	// runDuration is how far after the switch to running estimated_finish lies.
	runDuration = time.Hour
)

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// cloneJob returns a deep copy of j, so that neither the caller nor the
// server can change the other's copy.
func cloneJob(j *FineTuningJob) FineTuningJob {
	c := *j
	if j.Error != nil {
		e := *j.Error
		e.Param = clonePtr(e.Param)
		c.Error = &e
	}
	c.FineTunedModel = clonePtr(j.FineTunedModel)
	c.FinishedAt = clonePtr(j.FinishedAt)
	c.TrainedTokens = clonePtr(j.TrainedTokens)
	c.ValidationFile = clonePtr(j.ValidationFile)
	c.EstimatedFinish = clonePtr(j.EstimatedFinish)
	c.ResultFiles = slices.Clone(j.ResultFiles)
	if c.ResultFiles == nil {
		c.ResultFiles = []string{}
	}
	c.Integrations = bytes.Clone(j.Integrations)
	c.Metadata = maps.Clone(j.Metadata)
	c.Method = bytes.Clone(j.Method)
	return c
}

// AddJob stores a copy of job and returns the stored job. Zero fields are
// filled: ID with the next "ftjob-NNNNNN", Object with "fine_tuning.job",
// CreatedAt from the clock, OrganizationID with "org-gatewaytest", Status
// with "validating_files", ResultFiles with [] and Hyperparameters.NEpochs
// with "auto". Nothing else is changed and the state rules are not enforced,
// so a test can seed a job that breaks them on purpose; [Server.SetJobStatus]
// is the way to reach a state with its fields filled correctly.
// AddJob panics if a job with the same ID exists.
func (s *Server) AddJob(job FineTuningJob) FineTuningJob {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	j := cloneJob(&job)
	if j.ID == "" {
		j.ID = s.nextIDLocked("ftjob-")
	}
	if s.jobLocked(j.ID) != nil {
		panic("gatewaytest: AddJob: duplicate job id " + strconv.Quote(j.ID))
	}
	if j.Object == "" {
		j.Object = "fine_tuning.job"
	}
	if j.CreatedAt == 0 {
		j.CreatedAt = now.Unix()
	}
	if j.OrganizationID == "" {
		j.OrganizationID = organizationID
	}
	if j.Status == "" {
		j.Status = "validating_files"
	}
	if j.Hyperparameters.NEpochs == nil {
		j.Hyperparameters.NEpochs = "auto"
	}
	s.jobs = append(s.jobs, &j)
	return cloneJob(&j)
}

// Job returns a copy of the job with the given id, and whether it exists.
func (s *Server) Job(id string) (FineTuningJob, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobLocked(id)
	if j == nil {
		return FineTuningJob{}, false
	}
	return cloneJob(j), true
}

func (s *Server) jobLocked(id string) *FineTuningJob {
	for _, j := range s.jobs {
		if j.ID == id {
			return j
		}
	}
	return nil
}

// SetJobStatus moves the job with the given id to status and fills the
// fields the state rules require, with timestamps from the clock:
//
//   - queued: nothing else changes.
//   - running: fine_tuned_model, finished_at and trained_tokens become null
//     and estimated_finish is set an hour ahead.
//   - succeeded: fine_tuned_model ("ft:<model>:org-gatewaytest::<id>"),
//     finished_at, trained_tokens (5000) and result_files (a new
//     "fine-tune-results" file, listed by GET /v1/files) are set.
//   - failed: error is set to code "invalid_training_file", param
//     "training_file" (use [Server.FailJob] to choose it), finished_at is set.
//   - cancelled: nothing else is set.
//
// In every status but running, estimated_finish becomes null, and error is
// null in every status but failed. The allowed transitions are
// validating_files → queued → running → succeeded, and from any of the
// first three to failed or cancelled. SetJobStatus returns an error, and
// changes nothing, for an unknown id or status or an illegal transition.
func (s *Server) SetJobStatus(id, status string) error {
	var e *FineTuningError
	if status == "failed" {
		e = &FineTuningError{
			Code:    "invalid_training_file",
			Message: "The job failed due to an invalid training file.",
			Param:   strPtr("training_file"),
		}
	}
	_, err := s.transition(id, status, e)
	return err
}

// FailJob moves the job with the given id to failed with the given error,
// like SetJobStatus(id, "failed") but choosing the error (a nil Param is
// written as null). It returns an error for an unknown id or when the job
// is already succeeded, failed or cancelled.
func (s *Server) FailJob(id string, e FineTuningError) error {
	e.Param = clonePtr(e.Param)
	_, err := s.transition(id, "failed", &e)
	return err
}

// transition applies a status change under the lock and returns the job as
// it now is.
func (s *Server) transition(id, status string, failure *FineTuningError) (FineTuningJob, error) {
	now := s.clock().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobLocked(id)
	if j == nil {
		return FineTuningJob{}, fmt.Errorf("gatewaytest: unknown fine-tuning job %q", id)
	}
	if _, known := jobTransitions[status]; !known {
		return FineTuningJob{}, fmt.Errorf("gatewaytest: unknown fine-tuning job status %q", status)
	}
	if !slices.Contains(jobTransitions[j.Status], status) {
		return FineTuningJob{}, fmt.Errorf("gatewaytest: fine-tuning job %q cannot go from %s to %s", id, j.Status, status)
	}
	j.Status = status
	j.EstimatedFinish = nil
	j.Error = nil
	switch status {
	case "running":
		j.FineTunedModel, j.FinishedAt, j.TrainedTokens = nil, nil, nil
		finish := now + int64(runDuration/time.Second)
		j.EstimatedFinish = &finish
	case "succeeded":
		j.FineTunedModel = strPtr(fmt.Sprintf("ft:%s:%s::%s", j.Model, organizationID, j.ID))
		j.FinishedAt = clonePtr(&now)
		tokens := int64(trainedTokens)
		j.TrainedTokens = &tokens
		f := &File{
			ID: s.nextIDLocked("file-"), Object: "file", Bytes: 128, CreatedAt: now,
			Filename: "step_metrics.csv", Purpose: "fine-tune-results", Status: "processed",
		}
		s.files = append(s.files, f)
		j.ResultFiles = append(j.ResultFiles, f.ID)
	case "failed":
		j.Error = failure
		j.FinishedAt = clonePtr(&now)
	}
	return cloneJob(j), nil
}

func (s *Server) fineTuningRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/fine_tuning/jobs", s.handleCreateJob)
	mux.HandleFunc("GET /v1/fine_tuning/jobs", s.handleListJobs)
	mux.HandleFunc("GET /v1/fine_tuning/jobs/{id}", s.handleJob)
	mux.HandleFunc("POST /v1/fine_tuning/jobs/{id}/cancel", s.handleCancelJob)
}

type createJobRequest struct {
	Model           string            `json:"model"`
	TrainingFile    string            `json:"training_file"`
	ValidationFile  *string           `json:"validation_file"`
	Hyperparameters *Hyperparameters  `json:"hyperparameters"`
	Seed            *int64            `json:"seed"`
	Integrations    json.RawMessage   `json:"integrations"`
	Metadata        map[string]string `json:"metadata"`
	Method          json.RawMessage   `json:"method"`
}

// validEpochs reports whether v is "auto" or an integer 1 to 50.
func validEpochs(v any) bool {
	switch v := v.(type) {
	case string:
		return v == "auto"
	case float64:
		return v == float64(int(v)) && v >= 1 && v <= 50
	}
	return false
}

func (s *Server) handleCreateJob(w http.ResponseWriter, r *http.Request) {
	var req createJobRequest
	if !decodeBody(w, r, &req) {
		return
	}
	bad := func(param, msg string) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", msg, param, "")
	}
	switch {
	case req.Model == "":
		bad("model", "Missing required parameter: 'model'.")
		return
	case req.TrainingFile == "":
		bad("training_file", "Missing required parameter: 'training_file'.")
		return
	}
	hp := Hyperparameters{BatchSize: "auto", LearningRateMultiplier: "auto", NEpochs: "auto"}
	if h := req.Hyperparameters; h != nil {
		if h.NEpochs != nil {
			if !validEpochs(h.NEpochs) {
				bad("hyperparameters.n_epochs", "Invalid value for 'hyperparameters.n_epochs': expected 'auto' or an integer from 1 to 50.")
				return
			}
			hp.NEpochs = h.NEpochs
		}
		if h.BatchSize != nil {
			hp.BatchSize = h.BatchSize
		}
		if h.LearningRateMultiplier != nil {
			hp.LearningRateMultiplier = h.LearningRateMultiplier
		}
	}
	if len(req.Integrations) > 0 && string(req.Integrations) != nullJSON {
		var items []json.RawMessage
		if err := json.Unmarshal(req.Integrations, &items); err != nil {
			bad("integrations", "Invalid type for 'integrations': expected an array.")
			return
		}
		if len(items) > 5 {
			bad("integrations", "Invalid 'integrations': at most 5 integrations are allowed.")
			return
		}
	} else {
		req.Integrations = nil
	}
	seed := int64(defaultSeed)
	if req.Seed != nil {
		seed = *req.Seed
	}
	job := s.AddJob(FineTuningJob{
		Model: req.Model, TrainingFile: req.TrainingFile, ValidationFile: req.ValidationFile,
		Hyperparameters: hp, Seed: seed, Integrations: req.Integrations, Metadata: req.Metadata,
		Method: req.Method,
	})
	writeOK(w, r, job)
}

func (s *Server) handleListJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("Invalid value for 'limit': %q is not an integer of at least 1.", v), "limit", "invalid_value")
			return
		}
		limit = n
	}
	after := q.Get("after")

	s.mu.Lock()
	var page []FineTuningJob
	hasMore := false
	skipping := after != ""
	for i := len(s.jobs) - 1; i >= 0; i-- {
		j := s.jobs[i]
		if skipping {
			skipping = j.ID != after
			continue
		}
		if len(page) == limit {
			hasMore = true
			break
		}
		page = append(page, cloneJob(j))
	}
	s.mu.Unlock()
	if page == nil {
		page = []FineTuningJob{}
	}
	writeOK(w, r, jobList{Object: "list", Data: page, HasMore: hasMore})
}

func jobNotFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, "invalid_request_error",
		fmt.Sprintf("No fine-tuning job found with id %q.", id), "fine_tuning_job_id", "not_found")
}

func (s *Server) handleJob(w http.ResponseWriter, r *http.Request) {
	j, ok := s.Job(r.PathValue("id"))
	if !ok {
		jobNotFound(w, r.PathValue("id"))
		return
	}
	writeOK(w, r, j)
}

func (s *Server) handleCancelJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	before, ok := s.Job(id)
	if !ok {
		jobNotFound(w, id)
		return
	}
	j, err := s.transition(id, "cancelled", nil)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("Job %s has already completed and cannot be cancelled (status %s).", id, before.Status), "", "")
		return
	}
	writeOK(w, r, j)
}
