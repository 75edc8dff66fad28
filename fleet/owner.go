package fleet

import (
	"context"
	"fmt"
)

// MetaOwner is the Store metadata key that holds the owner id.
const MetaOwner = "owner"

// settleOwner returns the owner to use: the configured one (stored when
// the Store has none, refused when it holds another), else the stored one,
// else a new one, stored.
func settleOwner(ctx context.Context, s Store, configured string) (string, error) {
	stored, ok, err := s.Meta(ctx, MetaOwner)
	if err != nil {
		return "", fmt.Errorf("gpufleet: reading the owner from the store: %w", err)
	}
	switch {
	case ok && configured != "" && stored != configured:
		return "", fmt.Errorf("gpufleet: the store belongs to owner %q, not %q: use another store, or the same owner", stored, configured)
	case ok:
		return stored, nil
	}
	owner := configured
	if owner == "" {
		owner = newOwnerID()
	}
	if err := s.PutMeta(ctx, MetaOwner, owner); err != nil {
		return "", fmt.Errorf("gpufleet: storing the owner: %w", err)
	}
	return owner, nil
}
