// Command linkcheck is a program that serves the console, for
// TestNoReflectMethodCalls to link and inspect.
package main

import (
	"net/http"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/console"
)

func main() {
	g := gateway.New(gateway.Options{})
	http.ListenAndServe("localhost:0", console.New(g, console.Options{}))
}
