module github.com/modelgateway/gateway/examples

go 1.25.0

replace (
	github.com/modelgateway/gateway => ../
	github.com/modelgateway/gateway/bedrock => ../bedrock
)

require (
	github.com/google/go-cmp v0.7.0
	github.com/modelgateway/gateway v0.0.0
	github.com/modelgateway/gateway/bedrock v0.0.0-00010101000000-000000000000
)

require (
	github.com/aws/aws-sdk-go-v2 v1.47.7 // indirect
	github.com/aws/smithy-go v1.28.8 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
