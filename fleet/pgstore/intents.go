package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/gpufleet/gpufleet/fleet"
)

// PutIntent records in (its Spec without the private key; never fenced)
// and returns its Seq. Seq orders one caller's intents; intents put at
// once by several callers take the order the database gives them. A
// fleet's intents commit in Seq order (a transaction-scoped advisory lock
// per fleet is taken before the Seq is drawn): a sequence number is drawn
// at insert, not at commit, and a reader that saw a later intent commit
// before an earlier one would acknowledge past the earlier one and never
// carry it out.
func (s *Store) PutIntent(ctx context.Context, in fleet.Intent) (int64, error) {
	if in.Fleet == "" {
		return 0, errors.New("pgstore: an intent needs a fleet")
	}
	in.Seq = 0
	data, err := json.Marshal(in)
	if err != nil {
		return 0, fail(err, "encoding an intent")
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var seq int64
	if err := s.pool.QueryRow(ctx, s.q.putIntent, in.Fleet, data).Scan(&seq); err != nil {
		return 0, fail(err, "recording an intent of fleet %s", in.Fleet)
	}
	return seq, nil
}

// Intents returns the pending intents of fleet ("" for every fleet), by Seq.
func (s *Store) Intents(ctx context.Context, fleetName string) ([]fleet.Intent, error) {
	sql, args := s.q.intents, []any{}
	if fleetName != "" {
		sql, args = s.q.intentsF, []any{fleetName}
	}
	return s.readIntents(ctx, sql, args...)
}

// IntentsAfter returns the pending intents of fleet whose Seq is greater
// than after, by Seq (fleet.IntentTailReader): one query on the (fleet,
// seq) index. An empty fleet reads every fleet's.
func (s *Store) IntentsAfter(ctx context.Context, fleetName string, after int64) ([]fleet.Intent, error) {
	if fleetName == "" {
		ins, err := s.Intents(ctx, "")
		return slices.DeleteFunc(ins, func(in fleet.Intent) bool { return in.Seq <= after }), err
	}
	return s.readIntents(ctx, s.q.intentsAfter, fleetName, after)
}

// ReleaseIntents returns fleet's pending Deletes and Releases of the
// instance requestID after Seq after, by Seq (fleet.ReleaseIntentReader):
// the database filters them, so only those are sent and decoded.
func (s *Store) ReleaseIntents(ctx context.Context, fleetName, requestID string, after int64) ([]fleet.Intent, error) {
	return s.readIntents(ctx, s.q.releaseIntents, fleetName, after, requestID)
}

func (s *Store) readIntents(ctx context.Context, sql string, args ...any) ([]fleet.Intent, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fail(err, "reading intents")
	}
	var out []fleet.Intent
	var seq int64
	var data []byte
	_, err = pgx.ForEachRow(rows, []any{&seq, &data}, func() error {
		var in fleet.Intent
		if err := json.Unmarshal(data, &in); err != nil {
			return err
		}
		in.Seq = seq
		out = append(out, in)
		return nil
	})
	if err != nil {
		return nil, fail(err, "reading intents")
	}
	return out, nil
}

// AckIntents forgets fleet's intents up to and including Seq through.
// Fenced by fleet.FleetLease(fleet) (*fleet.FencedError).
func (s *Store) AckIntents(ctx context.Context, fleetName string, through int64) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	lease := fleet.FleetLease(fleetName)
	token, fenced := fleet.FenceToken(ctx, lease)
	if !fenced {
		if _, err := s.pool.Exec(ctx, s.q.ack, fleetName, through); err != nil {
			return fail(err, "acknowledging intents of fleet %s", fleetName)
		}
		return nil
	}
	tag, err := s.pool.Exec(ctx, s.q.ackFenced, fleetName, through, lease, token)
	if err != nil {
		return fail(err, "acknowledging intents of fleet %s", fleetName)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	return s.checkFence(ctx, lease, token)
}
