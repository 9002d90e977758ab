// Package control is the kit the gateway's products share to serve their
// control-plane routes: the translation of internal/httpapi's errors into
// the gateway's OpenAI-shaped ones, strict decoding of bodies, scope and
// workspace checks of the caller, the bounds of labels and metadata, and
// the generic skeletons of the routes of records kept by workspace and
// slug (SlugKind) and of policies kept by id (PolicyKind). A product's
// routes are written once over it; it imports the root package, observe
// and the std-only internal packages.
package control
