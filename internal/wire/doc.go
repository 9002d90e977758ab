// Package wire reads and writes JSON for the translators without
// reflection, giving the same results as encoding/json.
//
// A Decoder walks a JSON text once and hands its values to the caller,
// which decodes them into its own types. It takes only what it can decode
// exactly as encoding/json would; at anything else (a duplicate member, a
// member name that encoding/json would match case-insensitively, a number
// that is not an integer where one is wanted, invalid JSON) it fails, and
// the caller decodes the text with encoding/json instead, which gives the
// result or the error. The encoding functions write what json.Marshal
// writes for the same values, HTML escaping included.
package wire
