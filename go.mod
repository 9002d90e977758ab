module github.com/modelgateway/gateway

go 1.25.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/hashicorp/golang-lru/v2 v2.0.7
	golang.org/x/sync v0.22.0
)
