// Package fleet holds the provider-neutral vocabulary of gpufleet: offers,
// instances, VPCs, the Provider interface that the hotaisle and vultr packages
// implement, the error classes every provider error answers errors.Is for, and
// the Manager that provisions, watches and releases fleets.
//
// fleet imports neither provider nor the shim; providers and agents plug in
// through interfaces, the way database/sql drivers do.
package fleet
