package guardrail

import (
	"encoding/json"
	"net/http"
)

// Env is what the built-in checks that reach the network use.
type Env struct {
	// HTTPClient carries the webhook check's calls and the jwt check's
	// JWKS fetches, both to URLs a tenant wrote: pass a client whose
	// transport dials only the addresses tenants may reach. Nil means
	// http.DefaultClient, fit only when every guardrail is the operator's.
	HTTPClient *http.Client

	// Resolver resolves the host names of the validUrls check with
	// onlyDNS. Nil means net.DefaultResolver.
	Resolver Resolver
}

// NewRegistry returns a registry holding the built-in checks:
//
//	default.regexMatch           rule, not
//	default.contains             words, operator (any, all, none)
//	default.wordCount            minWords, maxWords, not
//	default.sentenceCount        minSentences, maxSentences, not
//	default.characterCount       minCharacters, maxCharacters, not
//	default.endsWith             suffix, not
//	default.isAllLowerCase       not (alias default.alllowercase)
//	default.alluppercase         not (alias default.isAllUpperCase)
//	default.jsonSchema           schema, not
//	default.jsonKeys             keys, operator
//	default.containsCode         format, not
//	default.validUrls            onlyDNS, not
//	default.modelWhitelist       models, not
//	default.allowedRequestTypes  allowedTypes, blockedTypes
//	default.requiredMetadataKeys metadataKeys, operator
//	default.jwt                  jwksUri, headerKey, algorithms, cacheMaxAge, clockTolerance, maxTokenAge
//	default.webhook              webhookURL, headers, timeout, failOnError
//	default.pii                  categories, redact (alias portkey.pii)
//
// The registry is the caller's: registering more checks on it changes no
// other registry.
func NewRegistry(env Env) *Registry {
	r := &Registry{}
	builtins := map[string]Factory{
		"default.regexMatch":           newRegexMatch,
		"default.contains":             newContains,
		"default.wordCount":            newWordCount,
		"default.sentenceCount":        newSentenceCount,
		"default.characterCount":       newCharacterCount,
		"default.endsWith":             newEndsWith,
		"default.isAllLowerCase":       lower,
		"default.alllowercase":         lower,
		"default.alluppercase":         upper,
		"default.isAllUpperCase":       upper,
		"default.jsonSchema":           newJSONSchema,
		"default.jsonKeys":             newJSONKeys,
		"default.containsCode":         newContainsCode,
		"default.validUrls":            validURLsFactory(env.Resolver),
		"default.modelWhitelist":       newModelWhitelist,
		"default.allowedRequestTypes":  newAllowedRequestTypes,
		"default.requiredMetadataKeys": newRequiredMetadataKeys,
		"default.jwt":                  jwtFactory(env.HTTPClient),
		"default.webhook":              webhookFactory(env.HTTPClient),
		"default.pii":                  newPII,
		"portkey.pii":                  newPII,
	}
	for id, f := range builtins {
		r.Register(id, f)
	}
	return r
}

func lower(params json.RawMessage) (Check, error) { return caseCheck(params, false) }
func upper(params json.RawMessage) (Check, error) { return caseCheck(params, true) }
