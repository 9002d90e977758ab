// Package mustache renders logic-less Mustache templates, the language of
// the gateway's prompt templates.
//
// It implements the parts of the Mustache specification
// (https://github.com/mustache/spec) that do not call code: variables
// ({{name}}, {{{name}}}, {{&name}}), dotted names, the implicit iterator
// {{.}}, sections, inverted sections, partials ({{>name}}, indented when
// they stand alone on a line), comments and set-delimiter tags. Lambdas,
// dynamic names and inheritance are not supported. The package's tests run
// the specification's own fixtures for all of these parts.
//
// # Data
//
// Render takes the data as encoding/json decodes it: map[string]any,
// []any, string, float64, json.Number, bool and nil. Other maps with string
// keys, slices, and Go's integer types work too; structs are not looked
// into. A name is looked up through the context stack as the specification
// says: the first part of a dotted name in the innermost context that has
// it, the other parts in that value only. A value is false in a section
// when it is nil, false, "", zero or an empty list, as in JavaScript.
// Numbers print as JSON prints them (85, 1.21, 1e+21); objects and arrays
// placed by a variable print as their JSON.
//
// # Escaping
//
// Options.Escape says how {{name}} escapes a value. EscapeHTML, the zero
// value, is the specification's HTML escaping. EscapeJSON is for
// templates that are themselves JSON text with tags inside their string
// literals, as a prompt is (a JSON array of chat messages): the value is
// escaped as the content of a JSON string, so quotes, backslashes,
// newlines, control characters and invalid UTF-8 cannot end the string or
// break the document. A partial tag sits inside a string too, so in this
// mode the text of the partial is escaped the same way: a partial holds
// prose, not JSON. EscapeNone places values as they are. In every mode
// {{{name}}} and {{&name}} place the value unescaped; a template that uses
// them inside JSON must be checked by the caller (json.Valid) after
// rendering.
//
// # Strict mode
//
// By default a name that is not found renders as the empty string, as the
// specification says. With Options.Strict, a variable tag whose name is not
// found, or a partial that does not exist, fails the render with a
// *MissingError naming it, so that a caller can tell its user which
// variable is missing. A key that is present with the value null is not
// missing. Sections and inverted sections are not affected: a missing name
// is simply false there, which is how a template makes a part optional.
//
// # Limits
//
// Templates may come from tenants, so rendering is bounded: partials nest
// at most Options.MaxDepth deep, the output is at most Options.MaxOutput
// bytes, and a render visits a bounded number of tags and list items, so a
// template that recurses or iterates without writing anything still ends.
// Each bound fails the render with an error wrapping ErrLimit that says
// which bound was reached.
package mustache
