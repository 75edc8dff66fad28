package shim

import (
	"context"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// HostKeyForgetter is the optional capability of a HostKeyStore, and of a
// HostKeyPolicy, to drop the pin of a host identity whose machine is gone
// (MemoryHostKeyStore has it; TrustOnFirstUse has it when its store does).
// Forgetting is housekeeping: a new rental of the same machine has another
// HostIdentity, so a pin left behind refuses nothing.
type HostKeyForgetter interface {
	// ForgetHostKey removes the key pinned for id; no pin is not an error.
	ForgetHostKey(ctx context.Context, id string) error
}

// HostIdentity is the identity a Starter checks an instance's host key
// under: one rental of one machine. It is the instance id followed by "#"
// and the request id when the instance has one (every instance a fleet
// Manager tracks), else by "@" and its creation time (RFC 3339, UTC) when
// known, else the instance id alone. Provider ids come back: a Hot Aisle
// bare-metal server released and reserved again keeps its name, reinstalled
// with a new host key; its new rental has another request id, so its key is
// pinned anew, while a changed key within one rental is still refused.
func HostIdentity(inst fleet.Instance) string {
	switch {
	case inst.RequestID != "":
		return inst.ID + "#" + inst.RequestID
	case !inst.Created.IsZero():
		return inst.ID + "@" + inst.Created.UTC().Format(time.RFC3339Nano)
	}
	return inst.ID
}

// ForgetHostKey drops the pin of id from the store, when the store can
// (HostKeyForgetter); otherwise it does nothing.
func (t tofu) ForgetHostKey(ctx context.Context, id string) error {
	if f, ok := t.store.(HostKeyForgetter); ok {
		return f.ForgetHostKey(ctx, id)
	}
	return nil
}

// ForgetInstance drops the host-key pin of inst's rental (its HostIdentity)
// when the host key policy can (HostKeyForgetter: TrustOnFirstUse over a
// MemoryHostKeyStore); jump hosts' pins are kept (they serve every
// instance). The fleet Manager calls it once the provider confirmed inst
// gone (fleet.InstanceForgetter), so a long-lived store does not keep a pin
// per rental ever made. Errors are the store's.
func (s *Starter) ForgetInstance(ctx context.Context, inst fleet.Instance) error {
	if f, ok := s.hostKeys.(HostKeyForgetter); ok {
		return f.ForgetHostKey(ctx, HostIdentity(inst))
	}
	return nil
}
