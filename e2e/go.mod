module github.com/modelgateway/gateway/e2e

go 1.25.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/modelgateway/gateway v0.2.0
	github.com/openai/openai-go/v3 v3.74.0
)

require (
	github.com/anthropics/anthropic-sdk-go/v2 v2.15.0
	github.com/aws/aws-sdk-go-v2 v1.47.7 // indirect
	github.com/aws/smithy-go v1.28.8 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/modelgateway/gateway/bedrock v0.2.0 // indirect
	github.com/modelgateway/gateway/examples v0.2.0 // indirect
	github.com/tidwall/gjson v1.19.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	golang.org/x/sync v0.22.0 // indirect
)

tool github.com/modelgateway/gateway/examples/server
