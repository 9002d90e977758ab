module github.com/modelgateway/gateway/console

go 1.25.0

require (
	github.com/coreos/go-oidc/v3 v3.21.0
	github.com/modelgateway/gateway v0.2.0
	golang.org/x/crypto v0.55.0
	golang.org/x/oauth2 v0.36.0
)

require (
	github.com/go-jose/go-jose/v4 v4.1.4 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
