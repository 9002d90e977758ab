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
	github.com/coreos/go-oidc/v3 v3.21.0 // indirect
	github.com/go-jose/go-jose/v4 v4.1.4 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
