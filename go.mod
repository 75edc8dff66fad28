module github.com/gpufleet/gpufleet

go 1.25.0

require (
	github.com/avast/retry-go/v4 v4.7.0 // indirect
	github.com/getkin/kin-openapi v0.153.0 // indirect
	github.com/google/go-querystring v1.2.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/jarcoal/httpmock v1.4.2 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/vultr/govultr/v3 v3.34.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)
