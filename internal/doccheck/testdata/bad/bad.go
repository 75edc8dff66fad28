// Package bad breaks every rule: see vultr.md §3 and ../shared/scenarios.md.
package bad

// Client is built by newClient; see also [helper] and [Client.Gone].
type Client struct {
	// Timeout is per call (see defaultTimeout).
	Timeout int
	retries int
}

// New returns a Client. Sources: DS, TF (they agree), GV.
func New() *Client { return newClient() }

// Poll waits as ANS does; the QZX limit applies.
func (c *Client) Poll() {}

func newClient() *Client { return &Client{} }

func helper() {}

const defaultTimeout = 30
