// Package prompt is the gateway's prompt product: versioned prompt
// templates, the partials they include, labels that point at versions,
// and collections that group them, served as control routes of a
// gateway (Mount), rendered with variables, and run as chat completions
// through the whole data plane.
//
// # Model
//
// A prompt is a Mustache template of a chat completions body: its
// "string" is the JSON array of chat messages as text, with tags inside
// its strings ([{"role":"user","content":"Hello {{name}}"}]), beside the
// model, virtual key, parameters (temperature, max_tokens, …), tools and
// tool_choice it is sent with. Every update that changes any of these
// is a new version; versions never change once written. A prompt has a
// default version (the first, until PUT /prompts/{id}/makeDefault picks
// another), and labels point at versions: production, staging and
// development exist in every workspace, and a workspace may make its own
// (POST /labels). An address names one version:
//
//	greeter               the default version (by slug; a prompt's ID works too)
//	greeter@3             version 3
//	greeter@latest        the newest version
//	greeter@production    the version the label production points at
//
// A partial is a template of text that prompts include with {{>slug}}
// (or {{>slug@2}}, and so on), versioned the same way. Prompts,
// partials, labels and collections belong to one workspace.
//
// # Rendering
//
// POST /prompts/{id}/render renders the addressed version with the
// request's "variables" as logic-less Mustache (variables, dotted names,
// sections, inverted sections, partials, comments). A value placed by
// {{name}} is escaped as the content of a JSON string, so quotes,
// newlines, backslashes and control characters in it cannot break the
// document; so is the text of a partial. A variable the template needs
// and the request does not give is a 400 whose param names it
// ("variables.name"). {{{name}}} places a value as it is: a render whose
// result is not valid JSON is a 400. Every other member of the request
// body overrides the body the prompt makes (its model, parameters…).
// Parsed templates are kept per version, and parsed again when a partial
// they include moves to another version.
//
// # Completions
//
// POST /prompts/{id}/completions renders the same body and serves it as
// POST /chat/completions of the same caller, in process
// (gateway.Gateway.ServeDataPlane): the caller's key, scopes, budgets,
// rate limits, cache options and provider headers apply, and the
// prompt's virtual key is used unless the caller selects a provider. Any
// provider works, through the gateway's translation; the answer, streamed
// or not, is the provider's. The request log of the chat completion
// carries the prompt's slug (metadata "_prompt", the key analytics group
// prompts by), ID ("_prompt_id") and version ("_prompt_version").
//
// # Trust
//
// Prompts are a tenant's data: a workspace key reads and writes its own
// workspace's only (another's answer 404, as if absent); an organisation
// key names the workspace with workspace_id. Reads and render need the
// prompts.read scope, writes prompts.write, and completions prompts.read
// with completions.write. Writes are audited (Options.Audit, an *observe.Auditor). Templates
// are bounded (256 KiB, well formed when written) and rendering is
// bounded in output, nesting and work (see internal/mustache), so a
// tenant's template cannot exhaust the gateway.
package prompt
