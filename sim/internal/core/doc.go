// Package core is what both fakes of package sim share: the request
// pipeline (routing once, authentication hook, rate-limit hook, faults and
// chaos mode, body limit, call log), the fault vocabulary, the clock, the
// in-memory transport, the inspection types (Call, Resource, Charge,
// Ledger, Snapshot) and the JSON writers the fakes answer with. It imports
// nothing of the module; package sim re-exports its public vocabulary as
// aliases.
package core
