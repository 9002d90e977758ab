package gatewaytest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxPurpose bounds the purpose field of an upload.
const maxPurpose = 256

// AddFile stores a copy of f and returns the stored file. Zero fields are
// filled: ID with the next "file-NNNNNN", Object with "file", CreatedAt from
// the clock and Status with "uploaded". AddFile panics if a file with the
// same ID exists.
func (s *Server) AddFile(f File) File {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := cloneFile(&f)
	if c.ID == "" {
		c.ID = s.nextIDLocked("file-")
	}
	if s.fileLocked(c.ID) != nil {
		panic("gatewaytest: AddFile: duplicate file id " + strconv.Quote(c.ID))
	}
	if c.Object == "" {
		c.Object = "file"
	}
	if c.CreatedAt == 0 {
		c.CreatedAt = now.Unix()
	}
	if c.Status == "" {
		c.Status = "uploaded"
	}
	s.files = append(s.files, &c)
	return cloneFile(&c)
}

// File returns a copy of the file with the given id, and whether it exists.
// Files come from AddFile, POST /v1/files and succeeded fine-tuning jobs.
func (s *Server) File(id string) (File, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fileLocked(id)
	if f == nil {
		return File{}, false
	}
	return cloneFile(f), true
}

func (s *Server) fileLocked(id string) *File {
	for _, f := range s.files {
		if f.ID == id {
			return f
		}
	}
	return nil
}

func cloneFile(f *File) File {
	c := *f
	c.ExpiresAt = clonePtr(f.ExpiresAt)
	c.StatusDetails = clonePtr(f.StatusDetails)
	return c
}

func (s *Server) fileRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/files", s.handleUpload)
	mux.HandleFunc("GET /v1/files", s.handleListFiles)
	mux.HandleFunc("GET /v1/files/{id}", s.handleFile)
}

// handleUpload reads a multipart/form-data body with the parts "file" and
// "purpose" (in any order), counting the file's bytes as they stream past
// rather than holding them.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	bad := func(param, msg string) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", msg, param, "")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		bad("", "Invalid file upload: the body must be multipart/form-data with the fields 'file' and 'purpose'.")
		return
	}
	var (
		purpose, filename string
		size              int64
		haveFile          bool
	)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			bad("", "Invalid file upload: malformed multipart body.")
			return
		}
		switch part.FormName() {
		case "file":
			haveFile = true
			filename = part.FileName()
			n, err := io.Copy(io.Discard, part)
			if err != nil {
				bad("file", "Invalid file upload: the file could not be read.")
				return
			}
			size += n
		case "purpose":
			b, err := io.ReadAll(io.LimitReader(part, maxPurpose+1))
			if err != nil || len(b) > maxPurpose {
				bad("purpose", "Invalid value for 'purpose'.")
				return
			}
			purpose = strings.TrimSpace(string(b))
		default:
			io.Copy(io.Discard, part)
		}
		part.Close()
	}
	switch {
	case !haveFile:
		bad("file", "Missing required parameter: 'file'.")
		return
	case purpose == "":
		bad("purpose", "Missing required parameter: 'purpose'.")
		return
	}
	if filename == "" {
		filename = "upload"
	}
	f := s.AddFile(File{Bytes: size, Filename: filename, Purpose: purpose, Status: "uploaded"})
	writeOK(w, r, f)
}

func (s *Server) handleListFiles(w http.ResponseWriter, r *http.Request) {
	purpose := r.URL.Query().Get("purpose")
	s.mu.Lock()
	data := []File{}
	for i := len(s.files) - 1; i >= 0; i-- {
		if f := s.files[i]; purpose == "" || f.Purpose == purpose {
			data = append(data, cloneFile(f))
		}
	}
	s.mu.Unlock()
	writeOK(w, r, fileList{Object: "list", Data: data})
}

func (s *Server) handleFile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f, ok := s.File(id)
	if !ok {
		writeError(w, http.StatusNotFound, "invalid_request_error",
			fmt.Sprintf("No such File object: %s", id), "id", "")
		return
	}
	writeOK(w, r, f)
}
