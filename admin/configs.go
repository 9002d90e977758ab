package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// configObject is the "object" of a config in responses.
const configObject = "config"

// serveConfigs serves the configs control plane under {prefix}/configs
// (the control plane, the reference's shapes):
//
//	POST   /configs                 create   → 200 {"success":true,"data":{"id","slug","version_id"}}
//	GET    /configs                 list     → 200 {"object":"list","success":true,"data","total"}
//	GET    /configs/{slug}          read     → 200 {"success":true,"data":{…,"config"}}, secrets masked
//	PUT    /configs/{slug}          update   → 200 {"success":true,"data":{"version_id"}}
//	DELETE /configs/{slug}          delete   → 200 {}
//	GET    /configs/{slug}/versions versions → 200 {"object":"list","data","total"}, newest first
//
// Reads need the configs.read scope, writes configs.write (403
// otherwise); workspaces are as for virtual keys (see serveVirtualKeys).
// The config member is validated exactly like an inline x-gateway-config
// (a 400 invalid_config whose message names the JSON path), and each
// custom_host in it is checked like an x-gateway-custom-host when
// written. What these routes write is a tenant's (docs/architecture.md, Trust): a config
// whose custom hosts they set is marked SavedConfig.Tenant, and its hosts
// are guarded when used too, their names resolved and every address
// checked at each dial, unless Options.CustomHostAllow lists them. A PUT
// replaces the whole config member, so a stored api_key never stays
// behind for a new custom_host: it is whatever the PUT sends; the audit
// record of a PUT that changes a custom_host names the old and new. A
// config is
// created as version 1 and every PUT adds the next version; the data
// plane uses the newest at once. Reads show api_key, secret_access_key
// and session_token masked, wherever they are in the config.
func (a *plane) serveConfigs(w http.ResponseWriter, r *http.Request) {
	id, ok := control.Scoped(w, r, gateway.ScopeConfigsRead, gateway.ScopeConfigsWrite)
	if !ok {
		return
	}
	store := a.o.Configs
	if store == nil {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "configs are not managed on this gateway"})
		return
	}
	k := configKind(store)
	var err error
	if slug := r.PathValue("slug"); slug != "" && strings.HasSuffix(r.Pattern, "/versions") {
		err = httpapi.Methods{http.MethodGet: func(w http.ResponseWriter, r *http.Request) error {
			return a.listConfigVersions(w, r, store, k, id, slug)
		}}.Serve(w, r)
	} else {
		err = k.Serve(w, r, id, slug, a.createConfig, a.getConfig, a.updateConfig)
	}
	if err != nil {
		control.Fail(w, r, a.o.ErrorLog, "config store", err)
	}
}

// configKind is the configs of store for the shared skeleton of the
// routes of records kept by workspace and slug.
func configKind(store ConfigStore) *control.SlugKind[gateway.SavedConfig, configWire] {
	return &control.SlugKind[gateway.SavedConfig, configWire]{What: "config",
		In: store.ConfigIn, All: store.Configs, Create: store.CreateConfig,
		Update: store.UpdateConfig, Delete: store.DeleteConfig,
		WS:      func(c *gateway.SavedConfig) string { return c.WorkspaceID },
		Clone:   cloneConfig,
		Wire:    configWireOf,
		Success: true,
	}
}

// configBody is the body of POST /configs and PUT /configs/{slug}. Absent
// fields of an update are left as they are; slug and workspace_id cannot
// be changed.
type configBody struct {
	Name        *string         `json:"name"`
	Slug        *string         `json:"slug"`
	Config      json.RawMessage `json:"config"`
	WorkspaceID *string         `json:"workspace_id"`
}

// checkConfig validates a config member like an inline config and checks
// its custom hosts; it returns the config as given, and parsed.
func (a *plane) checkConfig(raw json.RawMessage) (json.RawMessage, *gateway.Config, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, control.Invalid("config", "config must be a JSON object")
	}
	c, err := gateway.ParseConfig(raw)
	if err != nil {
		var ge *gateway.Error
		if errors.As(err, &ge) {
			e := *ge
			e.Param = "config"
			return nil, nil, &e
		}
		return nil, nil, err
	}
	if err := a.checkConfigHosts(c, ""); err != nil {
		return nil, nil, err
	}
	return append(json.RawMessage(nil), raw...), c, nil
}

// checkConfigHosts checks every custom_host of c, at path, with the
// custom-host guard.
func (a *plane) checkConfigHosts(c *gateway.Config, path string) error {
	if c.CustomHost != "" {
		p := join(path, "custom_host")
		if err := control.CheckHost(a.g, c.CustomHost, "config"); err != nil {
			var ge *gateway.Error
			if errors.As(err, &ge) {
				e := *ge
				e.Message = "invalid config: " + p + ": " + ge.Message
				return &e
			}
			return err
		}
	}
	for i, t := range c.Targets {
		if err := a.checkConfigHosts(t, fmt.Sprintf("%s[%d]", join(path, "targets"), i)); err != nil {
			return err
		}
	}
	return nil
}

// configHostChanges lists, for the audit record, the custom hosts that
// differ between the stored config old and its replacement c, by path:
// "custom_host: <old> → <new>", "targets[1].custom_host: …" (URLs
// without user info, query or fragment). An old config that no longer
// parses counts as one without hosts.
func configHostChanges(old, c json.RawMessage) []string {
	was, now := map[string]string{}, map[string]string{}
	if oc, err := gateway.ParseConfig(old); err == nil {
		configHosts(oc, "", was)
	}
	if nc, err := gateway.ParseConfig(c); err == nil {
		configHosts(nc, "", now)
	}
	var out []string
	for _, p := range slices.Sorted(maps.Keys(was)) {
		if now[p] != was[p] {
			out = append(out, p+": "+control.AuditURL(was[p])+" → "+control.AuditURL(now[p]))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(now)) {
		if _, ok := was[p]; !ok {
			out = append(out, p+": "+control.AuditURL("")+" → "+control.AuditURL(now[p]))
		}
	}
	return out
}

// configHosts adds the custom_host of c and of its targets to m, by path.
func configHosts(c *gateway.Config, path string, m map[string]string) {
	if c.CustomHost != "" {
		m[join(path, "custom_host")] = c.CustomHost
	}
	for i, t := range c.Targets {
		configHosts(t, fmt.Sprintf("%s[%d]", join(path, "targets"), i), m)
	}
}

// maskedConfig returns raw, a stored config, with its secrets masked.
func maskedConfig(raw json.RawMessage) json.RawMessage {
	c, err := gateway.ParseConfig(raw)
	if err != nil {
		return json.RawMessage("{}")
	}
	maskConfigSecrets(c)
	out, err := json.Marshal(c)
	if err != nil {
		return json.RawMessage("{}")
	}
	return out
}

func maskConfigSecrets(c *gateway.Config) {
	c.APIKey = control.MaskSecret(c.APIKey)
	c.SecretAccessKey = control.MaskSecret(c.SecretAccessKey)
	c.SessionToken = control.MaskSecret(c.SessionToken)
	for _, t := range c.Targets {
		maskConfigSecrets(t)
	}
}

func (a *plane) createConfig(w http.ResponseWriter, r *http.Request, k *control.SlugKind[gateway.SavedConfig, configWire], id gateway.Identity) error {
	var b configBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if err := control.CheckName(b.Name, true); err != nil {
		return err
	}
	ws, slug, err := k.CreateIn(id, b.WorkspaceID, b.Slug, *b.Name)
	if err != nil {
		return err
	}
	raw, parsed, err := a.checkConfig(b.Config)
	if err != nil {
		return err
	}
	if err := a.checkConfigGuardrails(r.Context(), ws, parsed, ""); err != nil {
		return err
	}
	control.OrgActedIn(r, id, ws)
	now := a.now().UTC()
	// Written through the control plane: a tenant's config, its hosts guarded.
	c := gateway.SavedConfig{ID: slug, WorkspaceID: ws, Config: raw, Name: *b.Name, Version: 1, VersionID: control.NewUUID(),
		CreatedAt: now, UpdatedAt: now, Tenant: true}
	if err := k.Store(r, slug, &c); err != nil {
		return err
	}
	type data struct {
		ID        string `json:"id"`
		Slug      string `json:"slug"`
		VersionID string `json:"version_id"`
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Success bool `json:"success"`
		Data    data `json:"data"`
	}{true, data{slug, slug, c.VersionID}})
	return nil
}

// configWire is a config in answers: the reference's config object.
// Config is left out of lists, a JSON object in a read, and a string (the
// reference's "serialized configuration") in the list of versions.
type configWire struct {
	ID            string    `json:"id"`
	Slug          string    `json:"slug"`
	Name          string    `json:"name"`
	WorkspaceID   string    `json:"workspace_id,omitempty"`
	Status        string    `json:"status"`
	IsDefault     int       `json:"is_default"`
	Version       int       `json:"version"`
	VersionID     string    `json:"version_id,omitempty"`
	CreatedAt     time.Time `json:"created_at,omitzero"`
	LastUpdatedAt time.Time `json:"last_updated_at,omitzero"`
	Config        any       `json:"config,omitempty"`
	Format        string    `json:"format,omitempty"`
	Object        string    `json:"object"`
}

func configWireOf(c *gateway.SavedConfig) configWire {
	return configWire{ID: c.ID, Slug: c.ID, Name: c.Name, WorkspaceID: c.WorkspaceID, Status: "active",
		Version: c.Version, VersionID: c.VersionID, CreatedAt: c.CreatedAt, LastUpdatedAt: c.UpdatedAt, Object: configObject}
}

func (a *plane) getConfig(w http.ResponseWriter, r *http.Request, k *control.SlugKind[gateway.SavedConfig, configWire], id gateway.Identity, slug string) error {
	c, err := k.Lookup(r, id, slug)
	if err != nil {
		return err
	}
	o := configWireOf(c)
	o.Config = maskedConfig(c.Config)
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Success bool       `json:"success"`
		Data    configWire `json:"data"`
	}{true, o})
	return nil
}

func (a *plane) listConfigVersions(w http.ResponseWriter, r *http.Request, store ConfigStore, k *control.SlugKind[gateway.SavedConfig, configWire], id gateway.Identity, slug string) error {
	page, err := control.Page(r.URL.Query())
	if err != nil {
		return err
	}
	cur, err := k.Lookup(r, id, slug)
	if err != nil {
		return err
	}
	all, err := store.ConfigVersions(r.Context(), cur.WorkspaceID, slug)
	if errors.Is(err, gateway.ErrNotFound) {
		return k.NotFound(slug)
	} else if err != nil {
		return err
	}
	sel := httpapi.Of(all, page)
	data := make([]configWire, len(sel))
	for i := range sel {
		v := &sel[i]
		o := configWireOf(v)
		// A version was created when it was written.
		o.CreatedAt = v.UpdatedAt
		o.Config, o.Format = string(maskedConfig(v.Config)), "json"
		data[i] = o
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object string       `json:"object"`
		Total  int          `json:"total"`
		Data   []configWire `json:"data"`
	}{"list", len(all), data})
	return nil
}

func (a *plane) updateConfig(w http.ResponseWriter, r *http.Request, k *control.SlugKind[gateway.SavedConfig, configWire], id gateway.Identity, slug string) error {
	var b configBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if err := control.Fixed(b.Slug, b.WorkspaceID); err != nil {
		return err
	}
	if err := control.CheckName(b.Name, false); err != nil {
		return err
	}
	var raw json.RawMessage
	var parsed *gateway.Config
	if b.Config != nil {
		var err error
		if raw, parsed, err = a.checkConfig(b.Config); err != nil {
			return err
		}
	}
	return k.Change(r, id, slug, func(old *gateway.SavedConfig) (*gateway.SavedConfig, []string, error) {
		if parsed != nil {
			if err := a.checkConfigGuardrails(r.Context(), old.WorkspaceID, parsed, ""); err != nil {
				return nil, nil, err
			}
		}
		c := cloneConfig(old)
		if b.Name != nil {
			c.Name = *b.Name
		}
		var changes []string
		if raw != nil {
			c.Config = raw
			changes = configHostChanges(old.Config, raw)
		}
		// Custom hosts the tenant set make the config a tenant's; other
		// changes leave the operator's hosts as trusted as they were.
		c.Tenant = old.Tenant || len(changes) > 0
		c.Version, c.VersionID, c.UpdatedAt = old.Version+1, control.NewUUID(), a.now().UTC()
		return c, changes, nil
	}, func(c *gateway.SavedConfig) {
		type data struct {
			VersionID string `json:"version_id"`
			Version   int    `json:"version"`
		}
		httpapi.WriteJSON(w, http.StatusOK, struct {
			Success bool `json:"success"`
			Data    data `json:"data"`
		}{true, data{c.VersionID, c.Version}})
	})
}

// cloneConfig returns a copy of c sharing no memory with it.
func cloneConfig(c *gateway.SavedConfig) *gateway.SavedConfig {
	v := *c
	v.Config = bytes.Clone(c.Config)
	return &v
}

// join appends field to the JSON path of a config, for messages.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
