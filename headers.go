package gateway

import (
	"context"
	"github.com/modelgateway/gateway/internal/bounds"
	"maps"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Request headers read by the gateway, written in lower case as in the API
// documentation; http.Header methods canonicalize them.
const (
	HeaderAPIKey            = "x-gateway-api-key"
	HeaderVirtualKey        = "x-gateway-virtual-key"
	HeaderProvider          = "x-gateway-provider"
	HeaderConfig            = "x-gateway-config"
	HeaderCustomHost        = "x-gateway-custom-host"
	HeaderTraceID           = "x-gateway-trace-id"
	HeaderMetadata          = "x-gateway-metadata"
	HeaderCacheForceRefresh = "x-gateway-cache-force-refresh"
	HeaderCacheNamespace    = "x-gateway-cache-namespace"
	HeaderRequestTimeout    = "x-gateway-request-timeout"
	HeaderForwardHeaders    = "x-gateway-forward-headers"

	HeaderHostAResourceName = "x-gateway-hosta-resource-name"
	HeaderHostADeploymentID = "x-gateway-hosta-deployment-id"
	HeaderHostAAPIVersion   = "x-gateway-hosta-api-version"
	HeaderHostAModelName    = "x-gateway-hosta-model-name"
	HeaderHostBProjectID    = "x-gateway-hostb-project-id"
	HeaderHostBRegion       = "x-gateway-hostb-region"
	HeaderHostCAccessKeyID  = "x-gateway-hostc-access-key-id"
	HeaderHostCSecretKey    = "x-gateway-hostc-secret-access-key"
	HeaderHostCSessionToken = "x-gateway-hostc-session-token"
	HeaderHostCRegion       = "x-gateway-hostc-region"
)

// canonicalHeaders maps the lower-case header names above to their
// canonical form, so lookups need no canonicalization per request.
var canonicalHeaders = func() map[string]string {
	m := make(map[string]string)
	for _, n := range []string{HeaderAPIKey, HeaderVirtualKey, HeaderProvider, HeaderConfig, HeaderCustomHost,
		HeaderTraceID, HeaderMetadata, HeaderCacheForceRefresh, HeaderCacheNamespace, HeaderRequestTimeout,
		HeaderForwardHeaders, HeaderHostAResourceName, HeaderHostADeploymentID, HeaderHostAAPIVersion,
		HeaderHostAModelName, HeaderHostBProjectID, HeaderHostBRegion, HeaderHostCAccessKeyID, HeaderHostCSecretKey,
		HeaderHostCSessionToken, HeaderHostCRegion, HeaderCacheStatus, HeaderRetryAttemptCount,
		HeaderLastUsedOptionIndex, HeaderRateLimitRequests, HeaderRateLimitRemainingRequests,
		HeaderRateLimitTokens, HeaderRateLimitRemainingTokens} {
		m[n] = textproto.CanonicalMIMEHeaderKey(n)
	}
	return m
}()

// headerValues returns the values of the gateway header name.
func headerValues(h http.Header, name string) []string {
	if c, ok := canonicalHeaders[name]; ok {
		return h[c]
	}
	return h.Values(name)
}

// setHeader sets the gateway header name in h, without canonicalizing the
// name on every call.
func setHeader(h http.Header, name, value string) {
	if c, ok := canonicalHeaders[name]; ok {
		h[c] = []string{value}
		return
	}
	h.Set(name, value)
}

// Response headers added by the gateway.
const (
	HeaderCacheStatus         = "x-gateway-cache-status"
	HeaderRetryAttemptCount   = "x-gateway-retry-attempt-count"
	HeaderLastUsedOptionIndex = "x-gateway-last-used-option-index"
)

// Special metadata keys with a meaning to analytics.
const (
	MetadataUser         = "_user"
	MetadataPrompt       = "_prompt"
	MetadataOrganisation = "_organisation"
	MetadataEnvironment  = "_environment"
)

// Bounds on gateway headers.
const (
	maxTraceIDLen        = 128
	maxMetadataKeys      = bounds.MaxMetadataKeys
	maxMetadataBytes     = bounds.MaxMetadataBytes
	maxCacheNamespaceLen = 256
	maxForwardHeaders    = 64
)

// HostSettings are the settings of the cloud model hosts: hostA (Azure
// OpenAI), hostB (Vertex AI) and hostC (Bedrock). They come from the
// x-gateway-host{a,b,c}-* headers, a virtual key or a config target.
// SecretAccessKey and SessionToken are secrets: never logged.
type HostSettings struct {
	ResourceName    string `json:"resource_name,omitempty"`
	DeploymentID    string `json:"deployment_id,omitempty"`
	APIVersion      string `json:"api_version,omitempty"`
	ModelName       string `json:"model_name,omitempty"`
	ProjectID       string `json:"project_id,omitempty"`
	Region          string `json:"region,omitempty"`
	AccessKeyID     string `json:"access_key_id,omitempty"`
	SecretAccessKey string `json:"secret_access_key,omitempty"`
	SessionToken    string `json:"session_token,omitempty"`
}

// merge fills the fields of h that are empty from o.
func (h *HostSettings) merge(o HostSettings) {
	fill := func(dst *string, src string) {
		if *dst == "" {
			*dst = src
		}
	}
	fill(&h.ResourceName, o.ResourceName)
	fill(&h.DeploymentID, o.DeploymentID)
	fill(&h.APIVersion, o.APIVersion)
	fill(&h.ModelName, o.ModelName)
	fill(&h.ProjectID, o.ProjectID)
	fill(&h.Region, o.Region)
	fill(&h.AccessKeyID, o.AccessKeyID)
	fill(&h.SecretAccessKey, o.SecretAccessKey)
	fill(&h.SessionToken, o.SessionToken)
}

// mergeUnderStored fills the empty fields of h from o when h belongs to a
// stored credential: only the settings that cannot move the credential to
// another owner's resource (deployment, API version, model name, region).
// The resource name, project and key pair of a stored credential are never
// taken from the caller.
func (h *HostSettings) mergeUnderStored(o HostSettings) {
	h.merge(HostSettings{DeploymentID: o.DeploymentID, APIVersion: o.APIVersion, ModelName: o.ModelName, Region: o.Region})
}

// RequestOptions are the per-request settings read from the x-gateway-*
// headers, validated once by the ParseHeaders stage.
type RequestOptions struct {
	// Metadata is the request's metadata merged over the key's defaults.
	Metadata map[string]string

	CacheForceRefresh bool
	CacheNamespace    string

	// RequestTimeout bounds each attempt's time to response headers; zero
	// means the config decides (or no timeout).
	RequestTimeout time.Duration

	// ForwardHeaders are canonical names of request headers sent to the
	// provider as they are.
	ForwardHeaders []string

	// Provider selection.
	Provider   string // x-gateway-provider
	VirtualKey string // x-gateway-virtual-key
	Config     string // x-gateway-config: an id or inline JSON
	CustomHost string // x-gateway-custom-host
	Token      string // the bearer token of Authorization, else x-api-key; a secret

	Host HostSettings
}

// RequestOptionsFrom returns the request options the ParseHeaders stage
// stored in ctx. The map and slice in them are shared with the gateway and
// must not be modified.
func RequestOptionsFrom(ctx context.Context) (RequestOptions, bool) {
	st := stateFrom(ctx)
	if st == nil || !st.parsed {
		return RequestOptions{}, false
	}
	return st.opts, true
}

// singleHeader returns the value of a header sent exactly once.
func singleHeader(h http.Header, name string) (string, bool) {
	v := headerValues(h, name)
	if len(v) != 1 {
		return "", false
	}
	return v[0], true
}

// ParseHeaders is the middleware that reads and validates every
// x-gateway-* header once into the request's RequestOptions (see
// RequestOptionsFrom). A malformed value is a 400 invalid_header whose param names
// the header. The gateway's own headers and the caller's Authorization are
// then removed from the request so that no later stage forwards them.
func ParseHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, st := withState(w, r)
		if err := st.parseHeaders(r); err != nil {
			WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (st *requestState) parseHeaders(r *http.Request) error {
	if st.parsed {
		return nil
	}
	badAuth, err := st.opts.parse(r.Header, st.identity.Metadata)
	if err != nil {
		return err
	}
	st.parsed, st.badAuth = true, badAuth
	st.log.Metadata = st.opts.Metadata
	for k := range r.Header {
		// The gateway key is Authenticate's to check and remove, even when
		// it runs after this stage (a Gateway behind ParseHeaders).
		if k == "Authorization" || strings.HasPrefix(k, "X-Gateway-") && k != "X-Gateway-Api-Key" {
			delete(r.Header, k)
		}
	}
	return nil
}

// parseRequestOptions validates the gateway headers of h. defaults is the
// key's default metadata, which request metadata overrides key by key.
func parseRequestOptions(h http.Header, defaults map[string]string) (*RequestOptions, error) {
	o := new(RequestOptions)
	badAuth, err := o.parse(h, defaults)
	if err != nil {
		return nil, err
	}
	if badAuth {
		return nil, badAuthorization()
	}
	return o, nil
}

// Indexes of the option headers in the array parse collects them in.
const (
	hVirtualKey = iota
	hProvider
	hConfig
	hCustomHost
	hMetadata
	hCacheForceRefresh
	hCacheNamespace
	hRequestTimeout
	hForwardHeaders
	hHostAResourceName
	hHostADeploymentID
	hHostAAPIVersion
	hHostAModelName
	hHostBProjectID
	hHostBRegion
	hHostCAccessKeyID
	hHostCSecretKey
	hHostCSessionToken
	hHostCRegion
	numOptionHeaders
)

// optionHeaders maps the canonical name of each option header to its index.
var optionHeaders = func() map[string]int {
	m := make(map[string]int, numOptionHeaders)
	for i, n := range optionHeaderNames {
		m[textproto.CanonicalMIMEHeaderKey(n)] = i
	}
	return m
}()

var optionHeaderNames = [numOptionHeaders]string{HeaderVirtualKey, HeaderProvider, HeaderConfig, HeaderCustomHost,
	HeaderMetadata, HeaderCacheForceRefresh, HeaderCacheNamespace, HeaderRequestTimeout, HeaderForwardHeaders,
	HeaderHostAResourceName, HeaderHostADeploymentID, HeaderHostAAPIVersion, HeaderHostAModelName,
	HeaderHostBProjectID, HeaderHostBRegion,
	HeaderHostCAccessKeyID, HeaderHostCSecretKey, HeaderHostCSessionToken, HeaderHostCRegion}

// parse reads the option headers of h into o in one pass over h.
// badAuthorization refuses an Authorization that is not a bearer token
// where the gateway would send the token on.
func badAuthorization() error {
	return invalidHeader("Authorization", "must be Bearer followed by the provider token")
}

// mergedMetadataFits reports whether md merged over defaults keeps the
// bounds of x-gateway-metadata (64 keys, 8 KiB of keys and values), so
// that stored defaults written before their own bound was checked (or by a
// store that does not check it) are never copied into a request log over
// it. It looks at no more than 64 keys of each.
func mergedMetadataFits(defaults, md map[string]string) bool {
	if len(defaults) > maxMetadataKeys {
		return false
	}
	keys, n := len(md), 0
	for k, v := range md {
		n += len(k) + len(v)
	}
	for k, v := range defaults {
		if _, ok := md[k]; !ok {
			keys++
			n += len(k) + len(v)
		}
	}
	return keys <= maxMetadataKeys && n <= maxMetadataBytes
}

// parse fills o from the gateway headers of h. badAuth reports an
// Authorization that is not a bearer token: it is refused only where the
// token would be used, since beside a virtual key the caller's
// Authorization is dropped whatever it holds (the HTTP contract).
func (o *RequestOptions) parse(h http.Header, defaults map[string]string) (badAuth bool, err error) {
	var vals [numOptionHeaders]string
	var sent [numOptionHeaders]bool
	for k, v := range h {
		if len(k) < len("X-Gateway-") || k[:len("X-Gateway-")] != "X-Gateway-" {
			continue
		}
		i, ok := optionHeaders[k]
		if !ok {
			continue
		}
		if len(v) > 1 {
			return false, invalidHeader(optionHeaderNames[i], "must be sent once")
		}
		if len(v) == 1 {
			vals[i], sent[i] = v[0], true
		}
	}
	get := func(i int) string { return strings.TrimSpace(vals[i]) }

	md, err := parseMetadata(vals[hMetadata])
	if err != nil {
		return false, err
	}
	switch {
	case len(defaults) == 0:
		o.Metadata = md
	case !mergedMetadataFits(defaults, md):
		return false, invalidHeader(HeaderMetadata, "merged over the API key's default metadata, must have at most 64 keys and 8 KiB")
	case len(md) == 0:
		// A copy: the request log's sink owns the record's map, and the
		// key's defaults are shared by every request with that key.
		o.Metadata = maps.Clone(defaults)
	default:
		o.Metadata = make(map[string]string, len(defaults)+len(md))
		for k, v := range defaults {
			o.Metadata[k] = v
		}
		for k, v := range md {
			o.Metadata[k] = v
		}
	}

	if v := get(hCacheForceRefresh); v != "" {
		switch strings.ToLower(v) {
		case "true":
			o.CacheForceRefresh = true
		case "false":
		default:
			return false, invalidHeader(HeaderCacheForceRefresh, "must be true or false")
		}
	}
	if v := vals[hCacheNamespace]; v != "" {
		if !utf8.ValidString(v) || utf8.RuneCountInString(v) > maxCacheNamespaceLen {
			return false, invalidHeader(HeaderCacheNamespace, "must be at most 256 characters")
		}
		o.CacheNamespace = v
	}
	if v := get(hRequestTimeout); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 || ms > int64(24*time.Hour/time.Millisecond) {
			return false, invalidHeader(HeaderRequestTimeout, "must be a positive integer number of milliseconds")
		}
		o.RequestTimeout = time.Duration(ms) * time.Millisecond
	}
	if v := vals[hForwardHeaders]; v != "" {
		names, err := ParseForwardHeaders(v)
		if err != nil {
			return false, err
		}
		o.ForwardHeaders = names
	}

	o.Provider = get(hProvider)
	if sent[hProvider] && o.Provider == "" {
		return false, invalidHeader(HeaderProvider, "must not be empty")
	}
	if hasUpper(o.Provider) {
		o.Provider = strings.ToLower(o.Provider)
	}
	o.VirtualKey = get(hVirtualKey)
	o.Config = get(hConfig)
	o.CustomHost = get(hCustomHost)
	if auth := h["Authorization"]; len(auth) > 0 && auth[0] != "" {
		scheme, tok, ok := strings.Cut(auth[0], " ")
		if len(auth) > 1 || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			badAuth = true
		} else {
			o.Token = strings.TrimSpace(tok)
		}
	} else if k := h["X-Api-Key"]; len(k) == 1 && strings.TrimSpace(k[0]) != "" {
		// Anthropic's SDKs and agents send the provider token so.
		o.Token = strings.TrimSpace(k[0])
	}
	o.Host = HostSettings{
		ResourceName:    get(hHostAResourceName),
		DeploymentID:    get(hHostADeploymentID),
		APIVersion:      get(hHostAAPIVersion),
		ModelName:       get(hHostAModelName),
		ProjectID:       get(hHostBProjectID),
		Region:          get(hHostBRegion),
		AccessKeyID:     get(hHostCAccessKeyID),
		SecretAccessKey: get(hHostCSecretKey),
		SessionToken:    get(hHostCSessionToken),
	}
	if r := get(hHostCRegion); r != "" {
		if o.Host.Region != "" && o.Host.Region != r {
			return false, invalidHeader(HeaderHostCRegion, "conflicts with "+HeaderHostBRegion)
		}
		o.Host.Region = r
	}
	return badAuth, nil
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}
