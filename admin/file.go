package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// File is the operator's config file (examples/server's -config): the API
// keys, virtual keys, configs, rate-limits policies and workspaces a host
// starts with. Decode reads one; Apply adds its records to a store.
type File struct {
	APIKeys            []KeyEntry                 `json:"api_keys"`
	VirtualKeys        []gateway.VirtualKey       `json:"virtual_keys"`
	Configs            []gateway.SavedConfig      `json:"configs"`
	RateLimitsPolicies []gateway.RateLimitsPolicy `json:"rate_limits_policies"`
	Workspaces         []WorkspaceEntry           `json:"workspaces"`
	CustomHosts        struct {
		Allow []string `json:"allow"`
	} `json:"custom_hosts"`
}

// KeyEntry is a gateway API key as written in a File: the key itself, or
// the lower-case hex of its SHA-256 digest. An entry without WorkspaceID
// is an organisation key (docs/architecture.md, Trust): with the admin role it holds every
// scope over every workspace, so it can create workspaces (POST
// /admin/workspaces) and read the organisation-wide audit log; an entry
// with WorkspaceID is a key of that workspace. Name is for people, as a
// key created over HTTP has one; empty means the ID.
type KeyEntry struct {
	ID            string            `json:"id"`
	Name          string            `json:"name,omitempty"`
	Key           string            `json:"key,omitempty"`
	KeySHA256     string            `json:"key_sha256,omitempty"`
	WorkspaceID   string            `json:"workspace_id"`
	Role          gateway.Role      `json:"role,omitempty"`
	Disabled      bool              `json:"disabled,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	DefaultConfig string            `json:"default_config,omitempty"`
	Scopes        []gateway.Scope   `json:"scopes,omitempty"`
	ExpiresAt     time.Time         `json:"expires_at,omitzero"`
	Defaults      *FileDefaults     `json:"defaults,omitempty"`
}

// WorkspaceEntry is a workspace as written in a File: its id (the slug
// of POST /admin/workspaces), name, description and default guardrails.
// Applying it creates the workspace, or sets these fields of a stored
// one and keeps the rest (its rate and usage limits, its metadata).
type WorkspaceEntry struct {
	ID          string        `json:"id"`
	Name        string        `json:"name"`
	Description string        `json:"description,omitempty"`
	Defaults    *FileDefaults `json:"defaults,omitempty"`
}

// FileDefaults is the defaults object of an API key or workspace in a
// File: the guardrails attached to each of their requests, by id or
// slug, as the admin routes write them (defaults.input_guardrails,
// defaults.output_guardrails). Each list holds at most 16 ids; Records
// checks that, and CheckGuardrails that each id names a guardrail the
// key's or workspace's workspace may attach.
type FileDefaults struct {
	InputGuardrails  []string `json:"input_guardrails,omitempty"`
	OutputGuardrails []string `json:"output_guardrails,omitempty"`
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Decode reads a File from r. Every ${VAR} in the document is replaced by
// the environment variable VAR (JSON-escaped; empty when unset) before
// decoding. Unknown fields are an error naming the field.
//
// A rate_limits_policies entry without workspace_id belongs to the
// operator: it applies to every workspace (its conditions, e.g. on
// workspace_id, narrow it), and no workspace admin can list, change or
// delete it through the control plane. Policy ids are UUIDs, kept in lower
// case.
func Decode(r io.Reader) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data = envRef.ReplaceAllFunc(data, func(m []byte) []byte {
		v := os.Getenv(string(m[2 : len(m)-1]))
		q, _ := json.Marshal(v)
		return q[1 : len(q)-1]
	})
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("gateway: store file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("gateway: store file: trailing data after the JSON object")
	}
	return &f, nil
}

// Records are the records of a File, checked and made ready to store:
// API keys with their digests, default roles (organisation keys without
// a workspace), names (their IDs unless the file names them) and, as
// their creation and update times, the time Records was called (the
// file's keys are created or replaced each time it is applied), configs
// at version 1 unless the file says, policies active by default with
// lower-case ids.
type Records struct {
	APIKeys     []gateway.APIKey
	VirtualKeys []gateway.VirtualKey
	Configs     []gateway.SavedConfig
	Policies    []gateway.RateLimitsPolicy
	Workspaces  []gateway.Workspace // id, name, description and default guardrails: the fields a file sets
}

// Records checks every entry of f and returns its records. The error
// names the first bad entry (api_keys[1].role, say); a store applying f
// stores nothing then.
func (f *File) Records() (*Records, error) {
	out := &Records{APIKeys: make([]gateway.APIKey, 0, len(f.APIKeys))}
	// Where each id, key, slug and policy id was first seen, for the
	// errors naming a repeat.
	keyIDs := make(map[string]int, len(f.APIKeys))
	digests := make(map[[sha256.Size]byte]int, len(f.APIKeys))
	slugs := make(map[string]int, len(f.VirtualKeys))
	configIDs := make(map[string]int, len(f.Configs))
	policyIDs := make(map[string]int, len(f.RateLimitsPolicies))
	now := time.Now().UTC()
	for i, e := range f.APIKeys {
		k := gateway.APIKey{ID: e.ID, Name: e.Name, WorkspaceID: e.WorkspaceID, Role: e.Role, Disabled: e.Disabled, Metadata: e.Metadata,
			DefaultConfig: e.DefaultConfig, Scopes: e.Scopes, ExpiresAt: e.ExpiresAt, CreatedAt: now, UpdatedAt: now}
		if k.Name == "" {
			k.Name = e.ID
		}
		if e.WorkspaceID == "" {
			k.Type = gateway.KeyOrganisation // the operator's key over every workspace
		}
		if err := e.Defaults.set(fmt.Sprintf("api_keys[%d]", i), &k.InputGuardrails, &k.OutputGuardrails); err != nil {
			return nil, err
		}
		for j, s := range e.Scopes {
			if !gateway.ValidScope(s) {
				return nil, fmt.Errorf("gateway: store file: api_keys[%d].scopes[%d]: unknown scope %q", i, j, s)
			}
		}
		switch {
		case e.ID == "":
			return nil, fmt.Errorf("gateway: store file: api_keys[%d].id is required", i)
		case (e.Key == "") == (e.KeySHA256 == ""):
			return nil, fmt.Errorf("gateway: store file: api_keys[%d]: exactly one of key and key_sha256 is required", i)
		case e.Key != "":
			k.Digest = gateway.HashAPIKey(e.Key)
		default:
			d, err := gateway.ParseKeyDigest(e.KeySHA256)
			if err != nil {
				return nil, fmt.Errorf("gateway: store file: api_keys[%d].key_sha256: %w", i, unprefixed{err})
			}
			k.Digest = d
		}
		switch k.Role {
		case "":
			k.Role = gateway.RoleMember
		case gateway.RoleMember, gateway.RoleAdmin:
		default:
			return nil, fmt.Errorf("gateway: store file: api_keys[%d].role must be admin or member", i)
		}
		if j, ok := keyIDs[k.ID]; ok {
			return nil, fmt.Errorf("gateway: store file: api_keys[%d].id repeats api_keys[%d].id", i, j)
		}
		if j, ok := digests[k.Digest]; ok {
			return nil, fmt.Errorf("gateway: store file: api_keys[%d] has the same key as api_keys[%d]", i, j)
		}
		keyIDs[k.ID], digests[k.Digest] = i, i
		out.APIKeys = append(out.APIKeys, k)
	}
	for i, vk := range f.VirtualKeys {
		if vk.Slug == "" || vk.Provider == "" {
			return nil, fmt.Errorf("gateway: store file: virtual_keys[%d]: slug and provider are required", i)
		}
		if j, ok := slugs[vk.Slug]; ok {
			return nil, fmt.Errorf("gateway: store file: virtual_keys[%d].slug repeats virtual_keys[%d].slug", i, j)
		}
		slugs[vk.Slug] = i
		if vk.BaseURL != "" {
			if u, err := url.Parse(vk.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("gateway: store file: virtual_keys[%d].base_url must be an absolute http or https URL", i)
			}
		}
		if err := gateway.CheckAllowedRoutes(vk.AllowedRoutes); err != nil {
			var ge *gateway.Error
			if errors.As(err, &ge) {
				return nil, fmt.Errorf("gateway: store file: virtual_keys[%d].%s", i, ge.Message)
			}
			return nil, fmt.Errorf("gateway: store file: virtual_keys[%d]: %w", i, unprefixed{err})
		}
	}
	out.VirtualKeys = f.VirtualKeys
	for i, c := range f.Configs {
		if c.ID == "" {
			return nil, fmt.Errorf("gateway: store file: configs[%d].id is required", i)
		}
		if j, ok := configIDs[c.ID]; ok {
			return nil, fmt.Errorf("gateway: store file: configs[%d].id repeats configs[%d].id", i, j)
		}
		configIDs[c.ID] = i
		if _, err := gateway.ParseConfig(c.Config); err != nil {
			return nil, fmt.Errorf("gateway: store file: configs[%d].config: %w", i, unprefixed{err})
		}
	}
	out.Configs = slices.Clone(f.Configs)
	for i := range out.Configs {
		if out.Configs[i].Version == 0 {
			out.Configs[i].Version = 1
		}
	}
	out.Policies = make([]gateway.RateLimitsPolicy, 0, len(f.RateLimitsPolicies))
	for i, p := range f.RateLimitsPolicies {
		if p.Status == "" {
			p.Status = gateway.PolicyActive
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("gateway: store file: rate_limits_policies[%d]: %w", i, unprefixed{err})
		}
		p.ID = strings.ToLower(p.ID)
		if j, ok := policyIDs[p.ID]; ok {
			return nil, fmt.Errorf("gateway: store file: rate_limits_policies[%d].id repeats rate_limits_policies[%d].id", i, j)
		}
		policyIDs[p.ID] = i
		out.Policies = append(out.Policies, p)
	}
	wsIDs := make(map[string]int, len(f.Workspaces))
	for i, e := range f.Workspaces {
		if !validWorkspaceID(e.ID) {
			return nil, fmt.Errorf("gateway: store file: workspaces[%d].id must be 1 to 64 letters, digits, - and _, starting with a letter or digit", i)
		}
		if j, ok := wsIDs[e.ID]; ok {
			return nil, fmt.Errorf("gateway: store file: workspaces[%d].id repeats workspaces[%d].id", i, j)
		}
		wsIDs[e.ID] = i
		if e.Name == "" {
			return nil, fmt.Errorf("gateway: store file: workspaces[%d].name is required", i)
		}
		ws := gateway.Workspace{ID: e.ID, Name: e.Name, Description: e.Description}
		if err := e.Defaults.set(fmt.Sprintf("workspaces[%d]", i), &ws.InputGuardrails, &ws.OutputGuardrails); err != nil {
			return nil, err
		}
		out.Workspaces = append(out.Workspaces, ws)
	}
	return out, nil
}

// set checks the guardrail lists of d, the defaults of the entry at path,
// as the admin routes do before asking whether the ids exist (see
// CheckGuardrails), and writes them into in and out.
func (d *FileDefaults) set(path string, in, out *[]string) error {
	if d == nil {
		return nil
	}
	for _, l := range []struct {
		field string
		ids   []string
		to    *[]string
	}{{"defaults.input_guardrails", d.InputGuardrails, in}, {"defaults.output_guardrails", d.OutputGuardrails, out}} {
		if err := guardrailIDsError(l.field, l.ids); err != nil {
			return fmt.Errorf("gateway: store file: %s.%s", path, strings.TrimPrefix(err.Error(), "gateway: "))
		}
		*l.to = slices.Clone(l.ids)
	}
	return nil
}

// CheckGuardrails reports, as the admin routes do when a key or workspace
// is written, an id of the default guardrails of f's API keys and
// workspaces that g does not find for their workspace (an organisation
// key's: the organisation's), naming it: "api_keys[1].defaults.input_guardrails[0]".
// A host calls it before applying f with the Guardrails its admin routes
// check against (*guardrail.Hooks); without it, an unknown id is refused
// when a request would use it.
func (f *File) CheckGuardrails(ctx context.Context, g Guardrails) error {
	check := func(path, ws string, d *FileDefaults) error {
		if d == nil {
			return nil
		}
		for _, l := range []struct {
			field string
			ids   []string
		}{{"defaults.input_guardrails", d.InputGuardrails}, {"defaults.output_guardrails", d.OutputGuardrails}} {
			for i, id := range l.ids {
				ok, err := g.HasGuardrail(ctx, ws, id)
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("gateway: store file: %s.%s[%d]: no guardrail %s", path, l.field, i, control.Quote(id))
				}
			}
		}
		return nil
	}
	for i, e := range f.APIKeys {
		if err := check(fmt.Sprintf("api_keys[%d]", i), e.WorkspaceID, e.Defaults); err != nil {
			return err
		}
	}
	for i, e := range f.Workspaces {
		if err := check(fmt.Sprintf("workspaces[%d]", i), e.ID, e.Defaults); err != nil {
			return err
		}
	}
	return nil
}

// Target is a store a File is applied to record by record, as an
// in-memory store takes them (memstore.Store; a memstore.Store until v0.2).
// A database applies the Records of a File in one transaction of its own
// instead (sqlstore.Store.Load).
type Target interface {
	AddAPIKey(k gateway.APIKey)
	AddVirtualKey(vk gateway.VirtualKey)
	AddConfig(c gateway.SavedConfig)
	PutPolicy(ctx context.Context, p *gateway.RateLimitsPolicy) error
}

// Apply adds every record of f to s, after checking them all: an error
// leaves s unchanged.
func Apply(ctx context.Context, f *File, s Target) error {
	recs, err := f.Records()
	if err != nil {
		return err
	}
	for _, k := range recs.APIKeys {
		s.AddAPIKey(k)
	}
	for _, vk := range recs.VirtualKeys {
		s.AddVirtualKey(vk)
	}
	for _, c := range recs.Configs {
		s.AddConfig(c)
	}
	for i := range recs.Policies {
		if err := s.PutPolicy(ctx, &recs.Policies[i]); err != nil {
			return err
		}
	}
	if len(recs.Workspaces) == 0 {
		return nil
	}
	ws, ok := s.(WorkspaceStore)
	if !ok {
		return errors.New("gateway: store file: workspaces: the store keeps no workspaces")
	}
	for i := range recs.Workspaces {
		if err := applyWorkspace(ctx, ws, &recs.Workspaces[i]); err != nil {
			return err
		}
	}
	return nil
}

// applyWorkspace creates w in s, or sets the fields a file sets of the
// stored workspace w.ID.
func applyWorkspace(ctx context.Context, s WorkspaceStore, w *gateway.Workspace) error {
	now := time.Now().UTC()
	old, err := s.Workspace(ctx, w.ID)
	if errors.Is(err, gateway.ErrNotFound) {
		c := *w
		c.CreatedAt, c.UpdatedAt = now, now
		return s.CreateWorkspace(ctx, &c)
	}
	if err != nil {
		return err
	}
	return s.UpdateWorkspace(ctx, old, MergeFileWorkspace(old, w, now))
}

// MergeFileWorkspace returns stored, the record of a workspace a File
// names, with the fields the file sets taken from w (Records'
// Workspaces): name, description and default guardrails; updated at now.
// A store applying a File in a transaction of its own uses it, as Apply
// does.
func MergeFileWorkspace(stored, w *gateway.Workspace, now time.Time) *gateway.Workspace {
	c := stored.Clone()
	c.Name, c.Description = w.Name, w.Description
	c.InputGuardrails, c.OutputGuardrails = slices.Clone(w.InputGuardrails), slices.Clone(w.OutputGuardrails)
	c.UpdatedAt = now
	return c
}

// unprefixed is err without its own "gateway: " prefix, for messages that
// wrap it after one of their own.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(u.err.Error(), "gateway: ") }
func (u unprefixed) Unwrap() error { return u.err }
