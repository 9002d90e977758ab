module github.com/modelgateway/gateway/console/browsertest

go 1.25.0

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/modelgateway/gateway v0.2.0
	github.com/modelgateway/gateway/console v0.2.0
	github.com/modelgateway/gateway/sqlstore v0.2.0
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)
