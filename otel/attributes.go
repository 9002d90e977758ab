package otel

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
)

// GenAI attribute names of OpenTelemetry's semantic conventions for
// generative AI systems, set on a request's server span.
const (
	// AttrGenAISystem names the provider's system, with the values of the
	// conventions for the providers they know (openai, anthropic,
	// azure.ai.openai, gcp.vertex_ai, gcp.gemini, aws.bedrock, groq,
	// mistral_ai, deepseek), else the gateway's provider slug.
	AttrGenAISystem = attribute.Key("gen_ai.system")
	// AttrGenAIProviderName is the name later versions of the conventions
	// give gen_ai.system; it carries the same value.
	AttrGenAIProviderName = attribute.Key("gen_ai.provider.name")
	// AttrGenAIOperationName is chat, text_completion or embeddings, from
	// the route; absent on other routes.
	AttrGenAIOperationName = attribute.Key("gen_ai.operation.name")
	// AttrGenAIRequestModel is the model the request named, else the one
	// the answer named.
	AttrGenAIRequestModel = attribute.Key("gen_ai.request.model")
	// AttrGenAIResponseModel is the model that answered. The gateway's
	// record does not tell it apart from the requested model yet, so
	// Middleware does not set it.
	AttrGenAIResponseModel = attribute.Key("gen_ai.response.model")
	// AttrGenAIUsageInputTokens and AttrGenAIUsageOutputTokens are the
	// prompt and completion tokens the provider reported; both absent when
	// it reported none.
	AttrGenAIUsageInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	AttrGenAIUsageOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	// AttrGenAIUsageCacheReadInputTokens is the part of the input tokens
	// read from the provider's prompt cache, when it reported one.
	AttrGenAIUsageCacheReadInputTokens = attribute.Key("gen_ai.usage.cache_read.input_tokens")
)

// Gateway attribute names, set on a request's server span from its log
// record.
const (
	AttrGatewayTraceID       = attribute.Key("gateway.trace_id")       // the gateway's trace id (x-gateway-trace-id)
	AttrGatewayLogID         = attribute.Key("gateway.log_id")         // the request log's id, when known
	AttrGatewayProvider      = attribute.Key("gateway.provider")       // the gateway's provider slug, e.g. azure-openai
	AttrGatewayCacheStatus   = attribute.Key("gateway.cache_status")   // HIT, MISS, REFRESH, DISABLED
	AttrGatewayRetries       = attribute.Key("gateway.retries")        // retries made after the first try
	AttrGatewayFallbackIndex = attribute.Key("gateway.fallback_index") // the fallback target that answered
	AttrGatewayRescued       = attribute.Key("gateway.rescued")        // a retry or fallback turned a failure into a 2xx
	AttrGatewayCostUSD       = attribute.Key("gateway.cost_usd")       // the request's price in USD, when not zero
	AttrGatewayErrorCode     = attribute.Key("gateway.error_code")     // the error code of the gateway's answer or record
	AttrGatewayAborted       = attribute.Key("gateway.aborted")        // the answer was cut mid-stream
	AttrGatewayAPIKeyID      = attribute.Key("gateway.api_key_id")     // the id of the gateway API key, never the key
	AttrGatewayWorkspaceID   = attribute.Key("gateway.workspace_id")
	AttrGatewayVirtualKey    = attribute.Key("gateway.virtual_key") // the virtual key's slug
	AttrGatewayConfigID      = attribute.Key("gateway.config_id")   // the saved config's id
)

// genAISystem returns the gen_ai.system value of a gateway provider slug.
func genAISystem(provider string) string {
	switch provider {
	case "azure-openai":
		return "azure.ai.openai"
	case "vertex-ai":
		return "gcp.vertex_ai"
	case "google":
		return "gcp.gemini"
	case "bedrock":
		return "aws.bedrock"
	case "mistral-ai":
		return "mistral_ai"
	}
	return provider // openai, anthropic, groq, deepseek, and hosts' own
}

// genAIOperation returns the gen_ai.operation.name of a request path, or
// "" for a route that is no GenAI operation.
func genAIOperation(path string) string {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return "chat"
	case strings.HasSuffix(path, "/completions"):
		return "text_completion"
	case strings.HasSuffix(path, "/embeddings"):
		return "embeddings"
	}
	return ""
}
