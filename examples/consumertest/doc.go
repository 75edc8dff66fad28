// Package consumertest shows how an orchestrator built on gpufleet tests its
// own code against package sim, with no account and no waiting: the fakes of
// Vultr and Hot Aisle run in memory inside a testing/synctest bubble, where
// hours of cloud time pass in milliseconds. Faults are injected with the
// fakes' helpers (LockWindow, Outage, FlakyAttach, SoldOut, ...), and the
// tests assert what matters to whoever pays: nothing of any kind left in the
// fakes' inventories (servers, VPCs, SSH keys) and the bill in their
// ledgers. See consumer_test.go.
package consumertest
