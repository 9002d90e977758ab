module github.com/modelgateway/gateway/bedrock

go 1.25.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/modelgateway/gateway v0.2.0
)

require golang.org/x/sync v0.22.0 // indirect

require (
	github.com/aws/aws-sdk-go-v2 v1.47.7
	github.com/aws/smithy-go v1.28.8 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
)
