package gateway

import (
	"encoding/json"
	"fmt"
)

// File is an uploaded file (object "file"), an item of GET /files. An
// empty Object is written as "file". Deprecated members of the provider's
// shape (status, status_details) are kept; members this package does not
// know, such as expires_at, are kept in Extra.
type File struct {
	ID            string `json:"id"`
	Bytes         int64  `json:"bytes"`      // size
	CreatedAt     int64  `json:"created_at"` // Unix time in seconds
	Filename      string `json:"filename"`
	Object        string `json:"object"`                   // "file"
	Purpose       string `json:"purpose"`                  // e.g. fine-tune, assistants
	Status        string `json:"status"`                   // e.g. uploaded, processed, error
	StatusDetails string `json:"status_details,omitempty"` // why validation failed

	// Extra holds unknown members and values the fields cannot tell from
	// their zero value; see FineTuningJob.Extra.
	Extra map[string]json.RawMessage `json:"-"`
}

type fileFields File

// UnmarshalJSON decodes a file, keeping unknown members in Extra.
func (f *File) UnmarshalJSON(data []byte) error {
	return decodeInto(data, (*fileFields)(f), "object")
}

// MarshalJSON encodes f with its Extra members.
func (f File) MarshalJSON() ([]byte, error) {
	v := fileFields(f)
	if v.Object == "" && f.Extra["object"] == nil {
		v.Object = ObjectFile
	}
	return encodeObject(v)
}

// Validate checks that Object is "file" (or empty).
func (f *File) Validate() error {
	if f.Object != "" && f.Object != ObjectFile {
		return invalidValue("object", fmt.Sprintf("object must be %q, got %q", ObjectFile, f.Object))
	}
	return nil
}

// FileList is the answer of GET /files: Data and Object "list" (written
// when empty). Members some providers add (has_more, first_id, last_id)
// are kept in Extra. Nil Data is written as [].
type FileList struct {
	Data   []File `json:"data"`
	Object string `json:"object"`

	// Extra holds unknown members; see FineTuningJob.Extra.
	Extra map[string]json.RawMessage `json:"-"`
}

type fileListFields FileList

// UnmarshalJSON decodes a file list, keeping unknown members in Extra.
func (l *FileList) UnmarshalJSON(data []byte) error {
	return decodeInto(data, (*fileListFields)(l), "object", "data")
}

// MarshalJSON encodes l with its Extra members.
func (l FileList) MarshalJSON() ([]byte, error) {
	f := fileListFields(l)
	if f.Object == "" && l.Extra["object"] == nil {
		f.Object = ObjectList
	}
	if f.Data == nil && l.Extra["data"] == nil {
		f.Data = []File{}
	}
	return encodeObject(f)
}

// Validate checks that Object is "list" (or empty) and every file.
func (l *FileList) Validate() error {
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
