package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Object values of the fine-tuning and file resources.
const (
	ObjectFineTuningJob = "fine_tuning.job"
	ObjectFile          = "file"
	ObjectList          = "list"
)

// FineTuningJobStatus is the status of a fine-tuning job.
type FineTuningJobStatus string

// The six statuses of a fine-tuning job.
const (
	StatusValidatingFiles FineTuningJobStatus = "validating_files"
	StatusQueued          FineTuningJobStatus = "queued"
	StatusRunning         FineTuningJobStatus = "running"
	StatusSucceeded       FineTuningJobStatus = "succeeded"
	StatusFailed          FineTuningJobStatus = "failed"
	StatusCancelled       FineTuningJobStatus = "cancelled"
)

// Known reports whether s is one of the six statuses.
func (s FineTuningJobStatus) Known() bool {
	switch s {
	case StatusValidatingFiles, StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Bounds of a fine-tuning job, from the spec's Limits section.
const (
	maxIntegrations = 5
	minNEpochs      = 1
	maxNEpochs      = 50
)

// FineTuningJob is a fine-tuning job (object "fine_tuning.job"), as
// GET /fine_tuning/jobs/{id} answers it. Nullable members are pointers
// written as null when nil, never left out; an empty Object is written as
// "fine_tuning.job" and nil ResultFiles as []. Decoding keeps members this
// package does not know (method, metadata, …) in Extra, so a job decoded
// and encoded again is the same document.
type FineTuningJob struct {
	ID              string               `json:"id"`
	CreatedAt       int64                `json:"created_at"`       // Unix time in seconds
	Error           *FineTuningError     `json:"error"`            // set when Status is failed
	FineTunedModel  *string              `json:"fine_tuned_model"` // nil while running
	FinishedAt      *int64               `json:"finished_at"`      // Unix seconds; nil while running
	Hyperparameters Hyperparameters      `json:"hyperparameters"`
	Model           string               `json:"model"`  // the base model
	Object          string               `json:"object"` // "fine_tuning.job"
	OrganizationID  string               `json:"organization_id"`
	ResultFiles     []string             `json:"result_files"` // file ids
	Status          FineTuningJobStatus  `json:"status"`
	TrainedTokens   *int64               `json:"trained_tokens"` // billable tokens; nil while running
	TrainingFile    string               `json:"training_file"`
	ValidationFile  *string              `json:"validation_file"`
	Seed            int64                `json:"seed"`
	Integrations    []TrackerIntegration `json:"integrations,omitempty"`     // at most 5
	EstimatedFinish *int64               `json:"estimated_finish,omitempty"` // Unix seconds; nil unless running

	// Extra holds the members the fields above do not represent: unknown
	// members, and members whose value a field cannot tell from its zero
	// value (such as "integrations": null). MarshalJSON writes them back;
	// a field that is set wins over an Extra member of the same name.
	Extra map[string]json.RawMessage `json:"-"`
}

type fineTuningJobFields FineTuningJob

// UnmarshalJSON decodes a job, keeping unknown members in Extra. Status
// values outside the six are kept as they are, for Validate to report.
func (j *FineTuningJob) UnmarshalJSON(data []byte) error {
	return decodeInto(data, (*fineTuningJobFields)(j), "object", "result_files")
}

// MarshalJSON encodes j with its Extra members.
func (j FineTuningJob) MarshalJSON() ([]byte, error) {
	f := fineTuningJobFields(j)
	if f.Object == "" && j.Extra["object"] == nil {
		f.Object = ObjectFineTuningJob
	}
	if f.ResultFiles == nil && j.Extra["result_files"] == nil {
		f.ResultFiles = []string{}
	}
	return encodeObject(f)
}

// Validate checks the rules every job satisfies: object "fine_tuning.job"
// (an empty Object reads as that); status one of the six (an unknown status
// is an error, not silently accepted); a failed job has an error with code,
// message and a param member; a running job has null fine_tuned_model,
// finished_at and trained_tokens; a job that is not running has null
// estimated_finish; at most 5 integrations, each of type "tracker" with a
// tracker.project; n_epochs "auto" or 1 to 50. A violation is an *Error
// whose Param is the member's path, e.g. "integrations[2].tracker.project".
func (j *FineTuningJob) Validate() error {
	if j.Object != "" && j.Object != ObjectFineTuningJob {
		return invalidValue("object", fmt.Sprintf("object must be %q, got %q", ObjectFineTuningJob, j.Object))
	}
	if !j.Status.Known() {
		return invalidValue("status", fmt.Sprintf("unknown fine-tuning job status %q", string(j.Status)))
	}
	if j.Status == StatusFailed {
		switch e := j.Error; {
		case e == nil:
			return invalidValue("error", "a failed job must carry an error")
		case e.Code == "":
			return invalidValue("error.code", "the error of a failed job must have a code")
		case e.Message == "":
			return invalidValue("error.message", "the error of a failed job must have a message")
		case e.paramMissing:
			return invalidValue("error.param", "the error of a failed job must have a param member (null when no parameter is at fault)")
		}
	}
	if j.Status == StatusRunning {
		switch {
		case j.FineTunedModel != nil:
			return invalidValue("fine_tuned_model", "fine_tuned_model must be null while the job is running")
		case j.FinishedAt != nil:
			return invalidValue("finished_at", "finished_at must be null while the job is running")
		case j.TrainedTokens != nil:
			return invalidValue("trained_tokens", "trained_tokens must be null while the job is running")
		}
	} else if j.EstimatedFinish != nil {
		return invalidValue("estimated_finish", "estimated_finish must be null when the job is not running")
	}
	if n, ok := j.Hyperparameters.NEpochs.Fixed(); ok && (n < minNEpochs || n > maxNEpochs) {
		return invalidValue("hyperparameters.n_epochs", fmt.Sprintf("n_epochs must be \"auto\" or between %d and %d, got %d", minNEpochs, maxNEpochs, n))
	}
	if len(j.Integrations) > maxIntegrations {
		return invalidValue("integrations", fmt.Sprintf("a job has at most %d integrations, got %d", maxIntegrations, len(j.Integrations)))
	}
	for i, in := range j.Integrations {
		if err := in.validate(fmt.Sprintf("integrations[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// FineTuningError is the error of a failed fine-tuning job. All three
// members are always written; a nil Param is written as null, meaning the
// failure is not specific to one parameter.
type FineTuningError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"` // usually "training_file" or "validation_file"

	// Extra holds unknown members; see FineTuningJob.Extra.
	Extra map[string]json.RawMessage `json:"-"`

	// paramMissing records that a decoded error had no param member.
	paramMissing bool
}

type fineTuningErrorFields FineTuningError

// UnmarshalJSON decodes the error, keeping unknown members in Extra.
func (e *FineTuningError) UnmarshalJSON(data []byte) error {
	var f fineTuningErrorFields
	extra, err := decodeObject(data, &f)
	if err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(data), jsonNull) {
		return nil
	}
	f.paramMissing = !hasMember(data, "param")
	f.Extra = extra
	*e = FineTuningError(f)
	return nil
}

// MarshalJSON encodes e with its Extra members. param is always written,
// as null when Param is nil, except for an error decoded without a param
// member, which is written back without one.
func (e FineTuningError) MarshalJSON() ([]byte, error) {
	if e.paramMissing && e.Param == nil {
		return encodeObject(struct {
			Code    string                     `json:"code"`
			Message string                     `json:"message"`
			Extra   map[string]json.RawMessage `json:"-"`
		}{e.Code, e.Message, e.Extra})
	}
	return encodeObject(fineTuningErrorFields(e))
}

// hasMember reports whether the JSON object data, which decodeObject has
// accepted, has a member named name.
func hasMember(data []byte, name string) bool {
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(data, &keys)
	_, ok := keys[name]
	return ok
}

// Hyperparameters are a job's training settings. Members other than
// n_epochs (batch_size, learning_rate_multiplier, …) are kept in Extra as
// the provider wrote them.
type Hyperparameters struct {
	// NEpochs is required by the schema: an unset value is written as
	// "auto", its default.
	NEpochs NEpochs `json:"n_epochs,omitzero"`

	// Extra holds unknown members; see FineTuningJob.Extra.
	Extra map[string]json.RawMessage `json:"-"`

	// nEpochsMissing records that decoded hyperparameters had no n_epochs
	// member, so that they are written back without one.
	nEpochsMissing bool
}

type hyperparametersFields Hyperparameters

// UnmarshalJSON decodes hyperparameters, keeping unknown members in Extra.
func (h *Hyperparameters) UnmarshalJSON(data []byte) error {
	var f hyperparametersFields
	extra, err := decodeObject(data, &f)
	if err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(data), jsonNull) {
		return nil
	}
	f.nEpochsMissing = !hasMember(data, "n_epochs")
	f.Extra = extra
	*h = Hyperparameters(f)
	return nil
}

// MarshalJSON encodes h with its Extra members. n_epochs is always
// written, as "auto" when NEpochs is unset, except for hyperparameters
// decoded without an n_epochs member, which are written back without one.
func (h Hyperparameters) MarshalJSON() ([]byte, error) {
	if h.NEpochs.IsZero() && !h.nEpochsMissing {
		h.NEpochs = AutoEpochs()
	}
	return encodeObject(hyperparametersFields(h))
}

// NEpochs is the n_epochs hyperparameter: the string "auto", or a fixed
// number of epochs (1 to 50 for a valid job). The zero value is unset,
// which reads as the default, auto, and is left out of the JSON; use
// AutoEpochs and Epochs to build the other values.
type NEpochs struct {
	n    int
	kind uint8 // 0 unset, 1 auto, 2 fixed
}

// AutoEpochs returns n_epochs "auto": the number of epochs is picked from
// the dataset size.
func AutoEpochs() NEpochs { return NEpochs{kind: 1} }

// Epochs returns a fixed number of epochs. It does not check the bounds;
// FineTuningJob.Validate does.
func Epochs(n int) NEpochs { return NEpochs{n: n, kind: 2} }

// IsZero reports whether e is unset.
func (e NEpochs) IsZero() bool { return e.kind == 0 }

// Fixed returns the number of epochs and true, or 0 and false when e is
// auto or unset.
func (e NEpochs) Fixed() (int, bool) { return e.n, e.kind == 2 }

// String returns "auto" or the number.
func (e NEpochs) String() string {
	if e.kind == 2 {
		return strconv.Itoa(e.n)
	}
	return "auto"
}

// MarshalJSON writes "auto" (also for the unset value) or the number.
func (e NEpochs) MarshalJSON() ([]byte, error) {
	if e.kind == 2 {
		return strconv.AppendInt(nil, int64(e.n), 10), nil
	}
	return []byte(`"auto"`), nil
}

// UnmarshalJSON reads "auto" or an integer; null leaves e unchanged.
// Anything else is an error.
func (e *NEpochs) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, jsonNull):
		return nil
	case bytes.Equal(data, []byte(`"auto"`)):
		*e = AutoEpochs()
		return nil
	}
	var n int
	if err := json.Unmarshal(data, &n); err != nil {
		return errors.New(`n_epochs must be "auto" or an integer`)
	}
	*e = Epochs(n)
	return nil
}

// TrackerIntegration is one integration of a fine-tuning job: the settings
// of an external experiment tracker. Type is always "tracker".
type TrackerIntegration struct {
	Type    string  `json:"type"`
	Tracker Tracker `json:"tracker"`

	// Extra holds unknown members; see FineTuningJob.Extra.
	Extra map[string]json.RawMessage `json:"-"`
}

// IntegrationTracker is the only type of a TrackerIntegration.
const IntegrationTracker = "tracker"

type trackerIntegrationFields TrackerIntegration

// UnmarshalJSON decodes the integration, keeping unknown members in Extra.
func (t *TrackerIntegration) UnmarshalJSON(data []byte) error {
	return decodeInto(data, (*trackerIntegrationFields)(t), "tracker")
}

// MarshalJSON encodes t with its Extra members.
func (t TrackerIntegration) MarshalJSON() ([]byte, error) {
	return encodeObject(trackerIntegrationFields(t))
}

func (t *TrackerIntegration) validate(path string) error {
	if t.Type != IntegrationTracker {
		return invalidValue(path+".type", fmt.Sprintf("integration type must be %q, got %q", IntegrationTracker, t.Type))
	}
	if t.Tracker.Project == "" {
		return invalidValue(path+".tracker.project", "a tracker integration needs a project")
	}
	return nil
}

// Tracker are the settings of a tracker integration. Project is required;
// a nil Name means the job id is used, a nil Entity the tracker key's
// default entity.
type Tracker struct {
	Project string   `json:"project"`
	Name    *string  `json:"name,omitempty"`
	Entity  *string  `json:"entity,omitempty"`
	Tags    []string `json:"tags,omitempty"`

	// Extra holds unknown members and explicit nulls; see
	// FineTuningJob.Extra.
	Extra map[string]json.RawMessage `json:"-"`
}

type trackerFields Tracker

// UnmarshalJSON decodes tracker settings, keeping unknown members in Extra.
func (t *Tracker) UnmarshalJSON(data []byte) error {
	return decodeInto(data, (*trackerFields)(t))
}

// MarshalJSON encodes t with its Extra members.
func (t Tracker) MarshalJSON() ([]byte, error) {
	return encodeObject(trackerFields(t))
}

// FineTuningJobList is a page of GET /fine_tuning/jobs: Data, whether more
// jobs follow the last one, and Object "list" (written when empty). Nil
// Data is written as [].
type FineTuningJobList struct {
	Data    []FineTuningJob `json:"data"`
	HasMore bool            `json:"has_more"`
	Object  string          `json:"object"`

	// Extra holds unknown members; see FineTuningJob.Extra.
	Extra map[string]json.RawMessage `json:"-"`
}

type fineTuningJobListFields FineTuningJobList

// UnmarshalJSON decodes a page, keeping unknown members in Extra.
func (l *FineTuningJobList) UnmarshalJSON(data []byte) error {
	return decodeInto(data, (*fineTuningJobListFields)(l), "object", "data")
}

// MarshalJSON encodes l with its Extra members.
func (l FineTuningJobList) MarshalJSON() ([]byte, error) {
	f := fineTuningJobListFields(l)
	if f.Object == "" && l.Extra["object"] == nil {
		f.Object = ObjectList
	}
	if f.Data == nil && l.Extra["data"] == nil {
		f.Data = []FineTuningJob{}
	}
	return encodeObject(f)
}

// Validate checks that Object is "list" (or empty) and every job with
// FineTuningJob.Validate; Param paths start with "data[i]".
func (l *FineTuningJobList) Validate() error {
	if l.Object != "" && l.Object != ObjectList {
		return invalidValue("object", fmt.Sprintf("object must be %q, got %q", ObjectList, l.Object))
	}
	for i := range l.Data {
		if err := l.Data[i].Validate(); err != nil {
			return prefixParam(err, fmt.Sprintf("data[%d]", i))
		}
	}
	return nil
}

// prefixParam returns err with prefix before the Param of an *Error.
func prefixParam(err error, prefix string) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Param = prefix + "." + c.Param
	return &c
}
