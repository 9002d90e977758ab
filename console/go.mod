module github.com/modelgateway/gateway/console

go 1.25.0

require github.com/modelgateway/gateway v0.2.0

require (
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
