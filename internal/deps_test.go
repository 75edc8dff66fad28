// Package internal holds plumbing shared by the hotaisle and vultr clients.
package internal

// This test file pins the module's chosen dependencies in go.mod while the
// packages that use them are being written; remove once every one is used.
import (
	"testing"

	_ "github.com/avast/retry-go/v4"
	_ "github.com/getkin/kin-openapi/openapi2"
	_ "github.com/getkin/kin-openapi/openapi2conv"
	_ "github.com/getkin/kin-openapi/openapi3filter"
	_ "github.com/getkin/kin-openapi/routers/gorillamux"
	_ "github.com/jarcoal/httpmock"
	_ "github.com/stretchr/testify/require"
	_ "github.com/vultr/govultr/v3"
	_ "go.uber.org/goleak"
	_ "golang.org/x/crypto/ssh"
	_ "golang.org/x/crypto/ssh/knownhosts"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/sync/singleflight"
	_ "golang.org/x/time/rate"
)

func TestDependenciesResolve(t *testing.T) {}
