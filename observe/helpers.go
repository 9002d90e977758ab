package observe

import (
	"errors"
	"unicode/utf8"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// notFoundAs turns ErrNotFound into a 404 saying msg.
func notFoundAs(err error, msg string) error {
	if errors.Is(err, gateway.ErrNotFound) {
		return control.NotFound(msg)
	}
	return err
}

// maxModelBytes bounds a model name kept in a record, as the gateway
// bounds the model of its own requests.
const maxModelBytes = 256

// clipModel cuts m to maxModelBytes, on a character boundary.
func clipModel(m string) string {
	if len(m) <= maxModelBytes {
		return m
	}
	i := maxModelBytes
	for i > 0 && !utf8.RuneStart(m[i]) {
		i--
	}
	return m[:i]
}
