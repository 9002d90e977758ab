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
)

// File is the operator's config file (examples/server's -config): the API
// keys, virtual keys, configs and rate-limits policies a host starts
// with. Decode reads one; Apply adds its records to a store.
type File struct {
	APIKeys            []KeyEntry                 `json:"api_keys"`
	VirtualKeys        []gateway.VirtualKey       `json:"virtual_keys"`
	Configs            []gateway.SavedConfig      `json:"configs"`
	RateLimitsPolicies []gateway.RateLimitsPolicy `json:"rate_limits_policies"`
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
	return out, nil
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
	return nil
}

// unprefixed is err without its own "gateway: " prefix, for messages that
// wrap it after one of their own.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(u.err.Error(), "gateway: ") }
func (u unprefixed) Unwrap() error { return u.err }
