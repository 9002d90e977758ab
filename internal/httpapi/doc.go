// Package httpapi is the control plane's shared HTTP plumbing: one method
// dispatcher, paging, strict JSON decoding, query parameters and the
// compare-and-swap retry of an update. It knows nothing of the gateway's
// error shape: it reports a bad request as a *FieldError and a method it
// does not serve as a *MethodError, which the gateway turns into its
// OpenAI-shaped errors in one place. It imports the standard library only.
package httpapi
