package fleet

import (
	"context"
	"errors"
	"fmt"
)

// MetaOwner is the Store metadata key that holds the owner id.
const MetaOwner = "owner"

// ErrOwnerConflict is answered (errors.Is) by the error of NewManager when
// Config.Owner is set and the Store already belongs to another owner: the
// Store holds that owner's records, and this Manager would label its
// resources differently and take the other's for foreign. Use another
// Store, or the same owner. The error is an *OwnerConflictError.
var ErrOwnerConflict = errors.New("gpufleet: the store belongs to another owner")

// OwnerConflictError is the error of NewManager for a Store that belongs
// to another owner than Config.Owner; it answers errors.Is for
// ErrOwnerConflict.
type OwnerConflictError struct {
	Stored     string // the owner the Store holds
	Configured string // Config.Owner
}

func (e *OwnerConflictError) Error() string {
	return fmt.Sprintf("gpufleet: the store belongs to owner %q, not %q: use another store, or the same owner", e.Stored, e.Configured)
}

// Is reports whether target is ErrOwnerConflict.
func (e *OwnerConflictError) Is(target error) bool { return target == ErrOwnerConflict }

// MetaCreator is an optional Store capability: storing a named value only
// when none is stored, in one atomic step. NewManager stores the owner
// through it when the Store has it, so that Managers started at the same
// moment on one new Store settle on one owner: with different
// Config.Owner values exactly one starts and the others fail with
// ErrOwnerConflict; with an empty Config.Owner each takes the one stored.
// Without it the owner is read and then written, which is safe only when
// one Manager starts at a time. MemoryStore, MemoryLeaseStore and
// fleet/pgstore's Store have it.
type MetaCreator interface {
	// CreateMeta stores value under key when key holds no value, and
	// returns the value key holds afterwards: value when it was stored,
	// the value stored before otherwise. Errors: the Store's (nothing
	// stored).
	CreateMeta(ctx context.Context, key, value string) (stored string, err error)
}

// settleOwner returns the owner to use: the configured one (stored when
// the Store has none, refused when it holds another), else the stored one,
// else a new one, stored.
func settleOwner(ctx context.Context, s Store, configured string) (string, error) {
	stored, ok, err := s.Meta(ctx, MetaOwner)
	if err != nil {
		return "", fmt.Errorf("gpufleet: reading the owner from the store: %w", err)
	}
	if ok {
		return checkOwner(stored, configured)
	}
	owner := configured
	if owner == "" {
		owner = newOwnerID()
	}
	if c, ok := s.(MetaCreator); ok {
		stored, err := c.CreateMeta(ctx, MetaOwner, owner)
		if err != nil {
			return "", fmt.Errorf("gpufleet: storing the owner: %w", err)
		}
		return checkOwner(stored, configured)
	}
	if err := s.PutMeta(ctx, MetaOwner, owner); err != nil {
		return "", fmt.Errorf("gpufleet: storing the owner: %w", err)
	}
	return owner, nil
}

// checkOwner returns the stored owner unless another one is configured
// (*OwnerConflictError).
func checkOwner(stored, configured string) (string, error) {
	if configured != "" && stored != configured {
		return "", &OwnerConflictError{Stored: stored, Configured: configured}
	}
	return stored, nil
}
