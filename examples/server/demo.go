package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/gatewaytest"
)

// apiKey is the gateway API key the server announces: the key itself, and
// whether it came from GATEWAY_API_KEY, in which case it is never printed.
type apiKey struct {
	value   string
	fromEnv bool
}

// loadAPIKey returns the key of GATEWAY_API_KEY, or else a generated key,
// which it prints once on stderr, and adds it to store: as the admin key
// "key-default" of the workspace "default" when the store is otherwise
// empty (alone), else as the member key "key-demo" of that workspace,
// unless the store already holds it. A disabled key of the store is not
// reused: a key is generated instead.
func loadAPIKey(store *gateway.MemoryStore, alone bool, stderr io.Writer) apiKey {
	add := func(key string) {
		k := gateway.APIKey{ID: "key-demo", Digest: gateway.HashAPIKey(key), WorkspaceID: "default"}
		if alone {
			k.ID, k.Role = "key-default", gateway.RoleAdmin
		}
		store.AddAPIKey(k)
	}
	if v := os.Getenv("GATEWAY_API_KEY"); v != "" {
		k, err := store.APIKey(context.Background(), gateway.HashAPIKey(v))
		if err != nil {
			add(v)
			return apiKey{value: v, fromEnv: true}
		}
		if !k.Disabled {
			return apiKey{value: v, fromEnv: true}
		}
	}
	v := "gw-" + rand.Text()
	fmt.Fprintf(stderr, "gateway: generated API key %s; set GATEWAY_API_KEY to keep it\n", v)
	add(v)
	return apiKey{value: v}
}

// startDemo starts the demo's fake provider on a loopback port and adds
// the virtual key "demo" (provider openai, usable from every workspace)
// that points at it, with a random credential the provider requires. It
// fails if store already has a virtual key "demo". The caller closes the
// provider.
func startDemo(store *gateway.MemoryStore) (*gatewaytest.Server, error) {
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
