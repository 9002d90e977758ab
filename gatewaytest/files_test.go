package gatewaytest_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/gatewaytest"
)

// upload streams a multipart body through a pipe, the file part of size
// bytes, with the purpose part after it (so the server cannot rely on order).
func upload(t *testing.T, s *gatewaytest.Server, filename string, size int, purpose string) *http.Response {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		if filename != "" {
			fw, err := mw.CreateFormFile("file", filename)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for left := size; left > 0; left -= len(chunk) {
				if _, err := fw.Write(chunk[:min(left, len(chunk))]); err != nil {
					pw.CloseWithError(err)
					return
				}
			}
		}
		if purpose != "" {
			mw.WriteField("purpose", purpose)
		}
		pw.CloseWithError(mw.Close())
	}()
	res, err := http.Post(s.URL+"/files", mw.FormDataContentType(), pr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func TestUploadFile(t *testing.T) {
	s := newServer(t)
	const size = 3<<20 + 17
	got := readJSON(t, upload(t, s, "train.jsonl", size, "fine-tune"), 200)
	want := map[string]any{
		"id": "file-000001", "object": "file", "bytes": float64(size), "created_at": float64(gatewaytest.Epoch),
		"filename": "train.jsonl", "purpose": "fine-tune", "status": "uploaded",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("uploaded file (-want +got):\n%s", d)
	}
	if again := readJSON(t, do(t, s, "GET", "/files/file-000001", ""), 200); !cmp.Equal(want, again) {
		t.Errorf("retrieved file differs: %s", cmp.Diff(want, again))
	}
	rec := s.Requests()[0]
	if rec.Method != "POST" || rec.Path != "/v1/files" || rec.Body != nil {
		t.Errorf("upload recorded as %s %s with %d body bytes; want POST /v1/files and no body", rec.Method, rec.Path, len(rec.Body))
	}
}

func TestUploadFileBadRequest(t *testing.T) {
	tests := []struct {
		name, filename, purpose, param string
	}{
		{"missing file", "", "fine-tune", "file"},
		{"missing purpose", "a.jsonl", "", "purpose"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			e := errorOf(t, upload(t, s, tt.filename, 10, tt.purpose), 400)
			if e["param"] != tt.param {
				t.Errorf("param = %v, want %q", e["param"], tt.param)
			}
		})
	}
	t.Run("not multipart", func(t *testing.T) {
		s := newServer(t)
		errorOf(t, do(t, s, "POST", "/files", `{"purpose":"fine-tune"}`), 400)
		if got := readJSON(t, do(t, s, "GET", "/files", ""), 200)["data"]; !cmp.Equal(got, []any{}) {
			t.Errorf("refused uploads were stored: %v", got)
		}
	})
}

func TestListFiles(t *testing.T) {
	s := newServer(t)
	s.AddFile(gatewaytest.File{Filename: "a.jsonl", Purpose: "fine-tune", Bytes: 1})
	s.AddFile(gatewaytest.File{Filename: "b.pdf", Purpose: "assistants", Bytes: 2})
	s.AddFile(gatewaytest.File{Filename: "c.jsonl", Purpose: "fine-tune", Bytes: 3, Status: "processed"})
	tests := []struct {
		query string
		ids   []any
	}{
		{"", []any{"file-000003", "file-000002", "file-000001"}},
		{"?purpose=fine-tune", []any{"file-000003", "file-000001"}},
		{"?purpose=assistants", []any{"file-000002"}},
		{"?purpose=batch", []any{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got := readJSON(t, do(t, s, "GET", "/files"+tt.query, ""), 200)
			ids := []any{}
			for _, f := range got["data"].([]any) {
				ids = append(ids, f.(map[string]any)["id"])
			}
			if d := cmp.Diff(tt.ids, ids); d != "" {
				t.Errorf("ids (-want +got):\n%s", d)
			}
			if got["object"] != "list" {
				t.Errorf("object = %v", got["object"])
			}
		})
	}
	f, ok := s.File("file-000003")
	want := gatewaytest.File{ID: "file-000003", Object: "file", Bytes: 3, CreatedAt: gatewaytest.Epoch,
		Filename: "c.jsonl", Purpose: "fine-tune", Status: "processed"}
	if d := cmp.Diff(want, f); !ok || d != "" {
		t.Errorf("File (-want +got):\n%s", d)
	}
}

func TestFileNotFound(t *testing.T) {
	s := newServer(t)
	e := errorOf(t, do(t, s, "GET", "/files/file-nope", ""), 404)
	if d := cmp.Diff(map[string]any{"message": "No such File object: file-nope", "type": "invalid_request_error", "param": "id", "code": nil}, e); d != "" {
		t.Errorf("404 (-want +got):\n%s", d)
	}
}
