// Package api is the HTTP plumbing shared by the hotaisle and vultr clients:
// building requests, the client-side rate limiter, retries of idempotent calls
// with capped jittered backoff (retry-go), all waiting on one Clock, no
// redirect ever followed (a 3xx answer is an error), the API key cut out of
// every error built from an answer, and strict decoding of 2xx bodies. It
// knows nothing of either API's dialect: each client supplies the functions
// that set its auth header and turn an error answer into its own typed error.
package api
