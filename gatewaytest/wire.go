package gatewaytest

import "encoding/json"

// This file holds the JSON shapes the fake provider writes. They follow
// OpenAI's published OpenAPI schemas: nullable fields are pointers
// without omitempty, so they are written as null rather than left out.

// FineTuningJob is a fine-tuning job as OpenAI writes it (object
// "fine_tuning.job"). Pointer fields are nullable and are written as null
// when nil; ResultFiles is always written as an array. It is the type of the
// values passed to and returned by [Server.AddJob] and [Server.Job].
type FineTuningJob struct {
	// ID identifies the job, e.g. "ftjob-000001".
	ID string `json:"id"`
	// Object is always "fine_tuning.job".
	Object string `json:"object"`
	// CreatedAt is the Unix time in seconds the job was created.
	CreatedAt int64 `json:"created_at"`
	// Error is set when Status is "failed", nil otherwise.
	Error *FineTuningError `json:"error"`
	// FineTunedModel names the model being created; nil until the job succeeds.
	FineTunedModel *string `json:"fine_tuned_model"`
	// FinishedAt is the Unix time in seconds the job finished; nil until then.
	FinishedAt *int64 `json:"finished_at"`
	// Hyperparameters are the training settings.
	Hyperparameters Hyperparameters `json:"hyperparameters"`
	// Model is the base model being fine-tuned.
	Model string `json:"model"`
	// OrganizationID is the owner of the job, "org-gatewaytest" by default.
	OrganizationID string `json:"organization_id"`
	// ResultFiles lists the IDs of the result files; written as [] when empty.
	ResultFiles []string `json:"result_files"`
	// Status is one of validating_files, queued, running, succeeded, failed, cancelled.
	Status string `json:"status"`
	// TrainedTokens is the number of billable tokens; nil until the job succeeds.
	TrainedTokens *int64 `json:"trained_tokens"`
	// TrainingFile is the ID of the training file.
	TrainingFile string `json:"training_file"`
	// ValidationFile is the ID of the validation file, or nil.
	ValidationFile *string `json:"validation_file"`
	// Integrations holds the job's tracker integrations as raw JSON; nil is written as null.
	Integrations json.RawMessage `json:"integrations"`
	// Seed is the seed used for the job.
	Seed int64 `json:"seed"`
	// EstimatedFinish is the Unix time in seconds the job should finish; set only while running.
	EstimatedFinish *int64 `json:"estimated_finish"`
	// Metadata is the job's key-value metadata; nil is written as null.
	Metadata map[string]string `json:"metadata"`
	// Method is the fine-tuning method as raw JSON; left out when empty.
	Method json.RawMessage `json:"method,omitempty"`
}

// FineTuningError is the error of a failed fine-tuning job. All three keys are
// always written; Param is null when the failure is not parameter-specific.
type FineTuningError struct {
	// Code is a machine-readable error code.
	Code string `json:"code"`
	// Message is a human-readable error message.
	Message string `json:"message"`
	// Param names the invalid parameter (usually "training_file" or
	// "validation_file"), or is nil.
	Param *string `json:"param"`
}

// Hyperparameters are a fine-tuning job's training settings. Each value is
// the string "auto" or a number; a nil NEpochs is stored as "auto", and nil
// BatchSize and LearningRateMultiplier are left out.
type Hyperparameters struct {
	// BatchSize is "auto" or an integer 1 to 256.
	BatchSize any `json:"batch_size,omitempty"`
	// LearningRateMultiplier is "auto" or a positive number.
	LearningRateMultiplier any `json:"learning_rate_multiplier,omitempty"`
	// NEpochs is "auto" or an integer 1 to 50.
	NEpochs any `json:"n_epochs"`
}

// File is an uploaded file as OpenAI writes it (object "file"). It is the
// type of the values passed to and returned by [Server.AddFile] and
// [Server.File].
type File struct {
	// ID identifies the file, e.g. "file-000001".
	ID string `json:"id"`
	// Object is always "file".
	Object string `json:"object"`
	// Bytes is the size of the file.
	Bytes int64 `json:"bytes"`
	// CreatedAt is the Unix time in seconds the file was created.
	CreatedAt int64 `json:"created_at"`
	// ExpiresAt is the Unix time in seconds the file expires; left out when nil.
	ExpiresAt *int64 `json:"expires_at,omitempty"`
	// Filename is the name the file was uploaded with.
	Filename string `json:"filename"`
	// Purpose is the intended use, e.g. "fine-tune" or "assistants".
	Purpose string `json:"purpose"`
	// Status is "uploaded" for uploads, "processed" or "error" when seeded so.
	Status string `json:"status"`
	// StatusDetails explains a failed validation; left out when nil.
	StatusDetails *string `json:"status_details,omitempty"`
}

// apiError is the inside of an OpenAI error body. Param and Code are always
// written, as null when nil.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

type errorBody struct {
	Error apiError `json:"error"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// completion is both the non-streamed response and each streamed chunk of
// POST /completions (they share one shape). Usage is raw so a stream with
// include_usage can write "usage": null on every chunk but the last.
type completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             json.RawMessage    `json:"usage,omitempty"`
}

type completionChoice struct {
	Text         string          `json:"text"`
	Index        int             `json:"index"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type chatMessage struct {
	Role    string          `json:"role,omitempty"`
	Content *string         `json:"content,omitempty"`
	Refusal json.RawMessage `json:"refusal,omitempty"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatMessage    `json:"message,omitempty"`
	Delta        *chatMessage    `json:"delta,omitempty"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// chatCompletion is the response (object "chat.completion") and each
// streamed chunk (object "chat.completion.chunk") of POST /chat/completions.
type chatCompletion struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []chatChoice    `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

type embedding struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float64 `json:"embedding"`
}

type embeddingList struct {
	Object string      `json:"object"`
	Data   []embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type modelList struct {
	Object string  `json:"object"`
	Data   []model `json:"data"`
}

type jobList struct {
	Object  string          `json:"object"`
	Data    []FineTuningJob `json:"data"`
	HasMore bool            `json:"has_more"`
}

type fileList struct {
	Object  string `json:"object"`
	Data    []File `json:"data"`
	HasMore bool   `json:"has_more"`
}

// nullJSON is the JSON literal null, for raw fields that must be written as null.
const nullJSON = "null"
