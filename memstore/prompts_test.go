package memstore_test

import (
	"testing"

	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/prompt"
	"github.com/modelgateway/gateway/prompt/storetest"
)

func TestPromptStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) prompt.Store { return memstore.New() })
}
