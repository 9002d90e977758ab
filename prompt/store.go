package prompt

import (
	"context"
	"encoding/json"
	"time"
)

// Kind says what a Record is.
type Kind string

// The kinds of records.
const (
	KindPrompt     Kind = "prompt"
	KindPartial    Kind = "partial"
	KindLabel      Kind = "label"
	KindCollection Kind = "collection"
)

// Versioned reports whether records of kind k have versions: prompts and
// partials do, labels and collections do not.
func (k Kind) Versioned() bool { return k == KindPrompt || k == KindPartial }

// Record is a prompt, a partial, a label or a collection of one
// workspace, as a Store keeps it. The content of a prompt or partial is
// in its versions; its record holds which version is the default, and
// which version each label points at.
type Record struct {
	Kind        Kind   `json:"kind"`
	ID          string `json:"id"` // a UUID
	WorkspaceID string `json:"workspace_id,omitempty"`
	// Slug is unique per kind within a workspace: the name a template
	// uses for a partial ({{>slug}}), and how a prompt is addressed
	// beside its ID. A label's slug is its name.
	Slug string `json:"slug"`
	Name string `json:"name"`
	// CollectionID is the collection of a prompt or partial, or the
	// parent of a collection; empty for none.
	CollectionID string `json:"collection_id,omitempty"`

	Description string `json:"description,omitempty"` // of a label
	ColorCode   string `json:"color_code,omitempty"`  // of a label

	// DefaultVersion is the version used when none is named; Latest the
	// newest. Versions count from 1.
	DefaultVersion int `json:"default_version,omitempty"`
	LatestVersion  int `json:"latest_version,omitempty"`
	// Labels maps a label's ID to the version it points at.
	Labels map[string]int `json:"labels,omitempty"`

	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Clone returns a deep copy of r.
func (r *Record) Clone() *Record {
	c := *r
	if r.Labels != nil {
		c.Labels = make(map[string]int, len(r.Labels))
		for k, v := range r.Labels {
			c.Labels[k] = v
		}
	}
	return &c
}

// Version is one version of a prompt or partial. A version never changes
// once stored.
type Version struct {
	ID       string `json:"id"` // a UUID
	RecordID string `json:"record_id"`
	Number   int    `json:"number"`

	// Template is the Mustache template: for a prompt, the JSON array of
	// chat messages as text, with tags inside its strings; for a partial,
	// text placed inside such a string.
	Template    string `json:"string"`
	Description string `json:"description,omitempty"`

	// The rest belongs to prompts only: the body fields the rendered
	// messages are sent with.
	Model      string          `json:"model,omitempty"`
	VirtualKey string          `json:"virtual_key,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"` // a JSON object
	Functions  json.RawMessage `json:"functions,omitempty"`  // a JSON array
	Tools      json.RawMessage `json:"tools,omitempty"`      // a JSON array
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"` // a JSON object
	Raw        bool            `json:"raw,omitempty"`      // is_raw_template

	CreatedAt time.Time `json:"created_at"`
}

// Store keeps prompts, partials, labels and collections per workspace,
// with the versions of prompts and partials. memstore.Store and
// sqlstore.Store implement it.
//
// Implementations must be safe for concurrent use, and each method
// atomic with respect to the others. Record, UpdateRecord, DeleteRecord
// and Version return gateway.ErrNotFound for what they do not hold.
// Records and versions returned are the caller's to change.
//
// Record finds a record of kind and workspace by ID or by slug. Records
// returns the records of kind and workspace ordered by CreatedAt, then
// ID. CreateRecord stores rec, with its first version v for a versioned
// kind (nil otherwise), and returns gateway.ErrConflict when the ID, or
// the slug within the kind and workspace, is taken. UpdateRecord
// replaces the stored record old.ID with rec only if the stored one still
// has old's UpdatedAt, adding v as a new version when it is not nil, and
// returns gateway.ErrConflict otherwise (or when rec's slug is taken):
// the routes read, change and write back, and this keeps a racing update
// from being undone. DeleteRecord removes a record with its versions.
// Versions returns the versions of a record, newest first; Version one
// of them by number.
type Store interface {
	Record(ctx context.Context, kind Kind, workspaceID, idOrSlug string) (*Record, error)
	Records(ctx context.Context, kind Kind, workspaceID string) ([]Record, error)
	CreateRecord(ctx context.Context, rec *Record, v *Version) error
	UpdateRecord(ctx context.Context, old, rec *Record, v *Version) error
	DeleteRecord(ctx context.Context, kind Kind, workspaceID, id string) error
	Versions(ctx context.Context, recordID string) ([]Version, error)
	Version(ctx context.Context, recordID string, number int) (*Version, error)
}
