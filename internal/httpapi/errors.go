package httpapi

// FieldError reports a malformed part of a request: a body field, a query
// parameter or a path parameter, named by Param ("" for the body as a
// whole). The gateway answers it with a 400 naming Param.
type FieldError struct {
	Param   string
	Message string

	// Err is the cause, if any (ErrTrailing, say); never shown to the
	// caller.
	Err error
}

// Invalid returns a *FieldError for param.
func Invalid(param, msg string) *FieldError {
	return &FieldError{Param: param, Message: msg}
}

// Error returns "httpapi: " and the message, after the field it names.
func (e *FieldError) Error() string {
	if e.Param == "" {
		return "httpapi: " + e.Message
	}
	return "httpapi: " + e.Param + ": " + e.Message
}

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// MethodError reports a request whose method the route does not serve.
// The gateway answers it with a 405 and Allow as the Allow header.
type MethodError struct {
	Method string // the method of the request
	Path   string // the path of the request
	Allow  string // the methods the route serves, as an Allow header lists them
}

// Error says which method is refused on which path, and which are allowed.
func (e *MethodError) Error() string {
	return e.Method + " is not allowed on " + e.Path + "; allowed: " + e.Allow
}
