// Package vultr is a typed client for the Vultr API v2: plans and regions
// (with availability), instances and bare-metal servers, their VPCs (list,
// attach, detach), VPCs and SSH keys.
//
// # Where to start
//
//   - [New] with an API key and options such as [WithHTTPClient] (point it at
//     package sim's fake in tests), [WithRateLimit] and [WithRetry].
//   - [Client.ListPlans] and [Client.ListMetalPlans] for offers;
//     [Client.CreateInstance], [Client.GetInstance] and [Client.DeleteInstance]
//     (and their bare-metal twins) for servers; [Client.CreateVPC] and
//     [Client.AttachInstanceVPC] for private networks.
//   - [APIError] for what Vultr answered; errors.Is with package fleet's
//     classes (fleet.ErrLocked, fleet.ErrNotActive, ...) for what it meant.
//   - [NewProvider] to hand the client to a fleet.Manager.
//
// The Examples run against package sim's in-memory fake of Vultr.
//
// It differs from govultr where that matters for a fleet manager:
//
//   - Every non-2xx answer is a *APIError that answers errors.Is for one of the
//     classes of package fleet (fleet.ErrLocked, fleet.ErrNotActive,
//     fleet.ErrNotFound, ...). The message patterns that select a class live in
//     one table in errors.go; nothing else compares error text.
//   - A client-side token bucket (default 30 requests/s, Vultr's documented
//     limit) is shared by all calls of one Client. Its waits, Retry-After and
//     the retry backoff run on the Client's Clock (WithClock: give it the
//     clock of the fleet Manager and the simulator).
//   - Only GET and DELETE are retried, on 429 (honouring Retry-After) and on
//     502/503/504 or a transport failure, with capped jittered backoff bounded by
//     the call's context. Creates, PATCH, attach and detach are never retried:
//     a 5xx can hide a success, and a blind retry duplicates a server. Domain
//     refusals (locked, not active) are returned, not retried.
//   - Lists are iter.Seq2[T, error] iterators that follow meta.links.next
//     cursors to the end; a listing that would never end (repeated cursor,
//     empty page with a next cursor, far more items than meta.total, more
//     than MaxListPages pages) yields ErrEndlessList.
//   - A 2xx answer without the object or list the endpoint promises (an empty
//     body, {}, an error object, an object or item without its id) is a
//     *DecodeError: a list never takes such a page for its last one.
//   - Lists take one filter per request, as the API does (two: refused
//     before sending).
//   - The API key lives only in a closure that sets the Authorization header:
//     it reaches no log line, error or formatted value; an error body that
//     echoes it has it replaced by "[redacted]". No redirect is followed
//     (the API sends none): a 3xx answer is an *APIError of class
//     fleet.ErrUnavailable (its effect is unknown: a front that redirects
//     may have carried the request out) that unwraps to a *RedirectError,
//     and nothing is sent to the location.
//
// Raw types mirror the API and keep its units (plan RAM in MB, disk in GB,
// costs in USD); helpers parse the bare-metal "ram"/"disk" strings, the integer
// MAC address and the two date formats the API uses.
package vultr
