package main

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"strconv"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/gatewaytest"
	"github.com/modelgateway/gateway/memstore"
)

// startDemo starts the demo's fake provider on a loopback port and adds
// the virtual key "demo" (provider openai, usable from every workspace)
// that points at it, with a random credential the provider requires. It
// fails if store already has a virtual key "demo". The caller closes the
// provider.
func startDemo(store *memstore.Store) (*gatewaytest.Server, error) {
	if _, err := store.VirtualKey(context.Background(), "demo"); err == nil {
		return nil, errors.New("gateway: -demo: the config file already has a virtual key named demo")
	}
	token := "sk-demo-" + rand.Text()
	fake := gatewaytest.NewServer()
	fake.RequireToken(token)
	store.AddVirtualKey(gateway.VirtualKey{Slug: "demo", Provider: gateway.ProviderOpenAI, APIKey: token, BaseURL: fake.URL})
	return fake, nil
}

// demoBody is the chat completion the demo's curl command sends. It holds
// no single quote, so that the command can quote it for a shell.
const demoBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello, gateway"}]}`

// demoCurl returns a shell command that sends demoBody through the virtual
// key "demo" to the server listening on addr, with key. A key from
// GATEWAY_API_KEY is written as a reference to the variable, so that the
// command works in the shell that started the server without printing it.
func demoCurl(addr net.Addr, key apiKey) string {
	host := addr.String()
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		ip := "127.0.0.1"
		if ta.IP.To4() == nil {
			ip = "::1"
		}
		host = net.JoinHostPort(ip, strconv.Itoa(ta.Port))
	}
	keyHeader := "'x-gateway-api-key: " + key.value + "'"
	if key.fromEnv {
		keyHeader = `"x-gateway-api-key: $GATEWAY_API_KEY"`
	}
	return "curl http://" + host + "/v1/chat/completions -H " + keyHeader +
		" -H 'x-gateway-virtual-key: demo' -H 'Content-Type: application/json' -d '" + demoBody + "'"
}
