package gateway

import (
	"context"
	"encoding/json"
	"time"
)

// ResponseStore keeps the responses of POST /responses that the gateway
// answered itself (translated for a provider kind without a Responses
// API) and that asked to be stored (store, true unless sent false), per
// workspace, so that previous_response_id, GET and DELETE
// /responses/{id} and GET /responses/{id}/input_items work for every
// provider. Records older than the store's log retention may go. Another
// workspace's response is not found.
type ResponseStore interface {
	// PutResponse stores r, replacing a record of the same workspace
	// and id.
	PutResponse(ctx context.Context, r *StoredResponse) error

	// Response returns the response id of workspace, or ErrNotFound.
	Response(ctx context.Context, workspace, id string) (*StoredResponse, error)

	// DeleteResponse deletes the response id of workspace, or returns
	// ErrNotFound.
	DeleteResponse(ctx context.Context, workspace, id string) error
}

// StoredResponse is one response kept by a ResponseStore.
type StoredResponse struct {
	ID        string
	Workspace string // the workspace of the key that made it; "" for an organisation key
	Created   time.Time

	// Response is the Response object as answered, as JSON.
	Response json.RawMessage

	// Input is what the model was given, as a JSON array of items: the
	// input and output of the response previous_response_id named, if
	// any, then the request's input.
	Input json.RawMessage
}
