package sqlstore_test

import (
	"reflect"
	"slices"
	"testing"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/guardrail"
)

// TestEveryFieldIsStored fails when a record type of the gateway gains a
// field this store does not know: the field would be silently lost at the
// first reload. Store it (a column in a new migration, read and written,
// in TestRoundTrip's full records), then add it here.
func TestEveryFieldIsStored(t *testing.T) {
	for _, tc := range []struct {
		typ    reflect.Type
		stored []string
	}{
		{reflect.TypeFor[gateway.APIKey](), []string{"ID", "Digest", "WorkspaceID", "Role", "Disabled", "Metadata",
			"DefaultConfig", "Scopes", "ExpiresAt", "Type", "SubType", "UserID", "Name", "Description", "CreatedAt",
			"UpdatedAt", "RateLimits", "UsageLimits", "PreviousDigest", "PreviousValidUntil", "InputGuardrails", "OutputGuardrails"}},
		{reflect.TypeFor[gateway.VirtualKey](), []string{"Slug", "Provider", "APIKey", "BaseURL", "WorkspaceID", "HostSettings",
			"Name", "Note", "CreatedAt", "UpdatedAt", "Tenant", "AllowedRoutes", "Models", "Prices", "NamedOnly",
			"Integration"}}, // a provider's credential, models and prices are its integration's (catalog/storetest)
		{reflect.TypeFor[gateway.HostSettings](), []string{"ResourceName", "DeploymentID", "APIVersion", "ModelName",
			"ProjectID", "Region", "AccessKeyID", "SecretAccessKey", "SessionToken"}},
		{reflect.TypeFor[gateway.SavedConfig](), []string{"ID", "WorkspaceID", "Config", "Name", "Version", "VersionID",
			"CreatedAt", "UpdatedAt", "Tenant"}},
		{reflect.TypeFor[gateway.RateLimitsPolicy](), []string{"ID", "Name", "Conditions", "GroupBy", "Type", "Unit",
			"Value", "Status", "WorkspaceID", "OrganisationID", "CreatedAt", "LastUpdatedAt"}},
		{reflect.TypeFor[gateway.PolicyCondition](), []string{"Key", "Value"}}, // stored as JSON
		{reflect.TypeFor[gateway.PolicyGroupBy](), []string{"Key"}},            // stored as JSON
		// Request logs: TestLogStoreMatchesMemoryStore compares every
		// field with memstore's copies.
		{reflect.TypeFor[gateway.RequestLog](), []string{"ID", "Time", "TraceID", "Metadata", "KeyID", "WorkspaceID",
			"VirtualKey", "ConfigID", "Provider", "Model", "Method", "Path", "Query", "Ingress", "Status", "Latency", "TTFB",
			"BytesIn", "BytesOut", "PromptTokens", "CompletionTokens", "TotalTokens", "CachedPromptTokens", "Cost",
			"CostUnknown", "CacheStatus", "Attempts", "FallbackIndex", "Rescued", "ErrorCode", "Aborted", "SkippedTargets",
			"TrippedTargets", "RequestBody", "RequestBodyTruncated", "ResponseBody", "ResponseBodyTruncated", "Guardrails",
			"HookResults"}},
		{reflect.TypeFor[guardrail.Record](), []string{"ID", "Slug", "Name", "WorkspaceID", "Checks", "Actions", "StreamMode",
			"OnError", "VersionID", "OwnerID", "UpdatedBy", "CreatedAt", "UpdatedAt"}},
	} {
		for i := range tc.typ.NumField() {
			if f := tc.typ.Field(i); !slices.Contains(tc.stored, f.Name) {
				t.Errorf("gateway.%s.%s is not stored by sqlstore", tc.typ.Name(), f.Name)
			}
		}
	}
}
