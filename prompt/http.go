package prompt

import (
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// notFound is the 404 saying msg, naming param ("" for none): the field
// or path parameter that names what is not found.
func notFound(param, msg string) *gateway.Error {
	e := control.NotFound(msg)
	e.Param = param
	return e
}
