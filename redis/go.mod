module github.com/modelgateway/gateway/redis

go 1.25.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/modelgateway/gateway v0.2.0
	github.com/redis/go-redis/v9 v9.22.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
