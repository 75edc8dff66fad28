// Package good follows the rules: it cites README.md, uses an HTTP API over
// SSH, explains the dstack server (DS) and a TTLX (time-to-live extension),
// and writes X-Request-Id and VULTR_API_KEY as they are.
package good

// Client is a client; NewClient builds one. Prices are in US CENTS per hour.
type Client struct {
	// VPCID is the VPC's id; the config field is unexported and unnamed here.
	VPCID string
	retry int
}

// NewClient returns a Client with retry attempts; the date format is
// YYYY-MM-DD, and the model MI300X.
func NewClient(retry int) *Client { return &Client{retry: retry} }
