package pgstore

import "fmt"

// table holds the statements of one record table (fleets or instances:
// both have the columns id, fleet, version and data).
type table struct {
	kind string // "fleet" or "instance", for errors
	// insert: $1 id, $2 fleet, $3 data. update adds $4 version.
	insert, update string
	// The fenced forms add the lease name and token after those.
	insertFenced, updateFenced string
	// remove: $1 id. removeFenced: $1 id, $2 lease, $3 token, $4 fleet.
	remove, removeFenced string
	// diagnose: $1 id, $2 lease: the stored version and the lease's token.
	diagnose string
	all      string // version, data of every record
	fleetOf  string // $1 id: the record's fleet
	one      string // $1 id: version, data of the record
}

type queries struct {
	fleets, instances table
	meta, putMeta     string
	createMeta        string
	instanceByID      string // $1 id: version, data of the records whose request id or provider id is id
	acquire, renew    string
	release, leases   string
	holder, token     string
	putIntent         string
	intents, intentsF string
	intentsAfter      string // $1 fleet, $2 seq: the fleet's intents after seq
	releaseIntents    string // $1 fleet, $2 seq, $3 request id: its Deletes and the Releases of $3 after seq
	ack, ackFenced    string
}

// lockLease share-locks the lease row: an acquisition (an update of the
// row) waits for the statement's commit, and the statement re-reads a row
// an acquisition changed before comparing its token.
const lockLease = `WITH l AS (SELECT token FROM %s WHERE name = $%d FOR SHARE) `

func newTable(schema, name, kind string) table {
	t, lt := ident(schema, name), ident(schema, "leases")
	return table{
		kind:   kind,
		insert: fmt.Sprintf(`INSERT INTO %s (id, fleet, version, data) VALUES ($1, $2, 1, $3) ON CONFLICT (id) DO NOTHING`, t),
		update: fmt.Sprintf(`UPDATE %s SET fleet = $2, data = $3, version = version + 1, updated = now()
			WHERE id = $1 AND version = $4`, t),
		insertFenced: fmt.Sprintf(lockLease+`INSERT INTO %s (id, fleet, version, data)
			SELECT $1::text, $2::text, 1, $3::jsonb FROM l WHERE l.token = $5 ON CONFLICT (id) DO NOTHING`, lt, 4, t),
		updateFenced: fmt.Sprintf(lockLease+`UPDATE %s SET fleet = $2, data = $3, version = version + 1, updated = now()
			WHERE id = $1 AND version = $4 AND (SELECT token FROM l) = $6`, lt, 5, t),
		remove: fmt.Sprintf(`DELETE FROM %s WHERE id = $1`, t),
		removeFenced: fmt.Sprintf(lockLease+`DELETE FROM %s WHERE id = $1 AND fleet = $4 AND (SELECT token FROM l) = $3`,
			lt, 2, t),
		diagnose: fmt.Sprintf(`SELECT (SELECT version FROM %s WHERE id = $1), (SELECT token FROM %s WHERE name = $2)`, t, lt),
		all:      fmt.Sprintf(`SELECT version, data FROM %s`, t),
		fleetOf:  fmt.Sprintf(`SELECT fleet FROM %s WHERE id = $1`, t),
		one:      fmt.Sprintf(`SELECT version, data FROM %s WHERE id = $1`, t),
	}
}

func newQueries(schema string) queries {
	lt, it, mt := ident(schema, "leases"), ident(schema, "intents"), ident(schema, "meta")
	const cols = `name, holder, token, expires, ttl_micro`
	return queries{
		fleets:    newTable(schema, "fleets", "fleet"),
		instances: newTable(schema, "instances", "instance"),
		meta:      fmt.Sprintf(`SELECT value FROM %s WHERE key = $1`, mt),
		// Both conditions have an index (the primary key, and
		// instances_provider_id of migration 3).
		instanceByID: fmt.Sprintf(`SELECT version, data FROM %s WHERE id = $1 OR data->'Instance'->>'ID' = $1`,
			ident(schema, "instances")),
		putMeta: fmt.Sprintf(`INSERT INTO %s (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, mt),
		// On a conflict the row is locked and rewritten unchanged, so that
		// RETURNING gives the value committed first, even by a concurrent
		// insert this one waited for (DO NOTHING would return no row, and
		// a read in the same statement would not see that insert).
		createMeta: fmt.Sprintf(`INSERT INTO %s AS m (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = m.value RETURNING value`, mt),
		// A free, expired or own lease is granted; the token grows unless
		// the holder renews its own unexpired lease.
		acquire: fmt.Sprintf(`INSERT INTO %s AS l (%s) VALUES ($1, $2, 1, now() + $3::bigint * interval '1 microsecond', $3)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires = excluded.expires, ttl_micro = excluded.ttl_micro,
				token = CASE WHEN l.holder = excluded.holder AND l.expires > now() THEN l.token ELSE l.token + 1 END
			WHERE l.holder = excluded.holder OR l.expires <= now()
			RETURNING %s`, lt, cols, cols),
		renew: fmt.Sprintf(`UPDATE %s SET expires = now() + $4::bigint * interval '1 microsecond', ttl_micro = $4
			WHERE name = $1 AND holder = $2 AND token = $3 AND expires > now() RETURNING %s`, lt, cols),
		release: fmt.Sprintf(`UPDATE %s SET expires = now() WHERE name = $1 AND holder = $2 AND token = $3 AND expires > now()`, lt),
		leases:  fmt.Sprintf(`SELECT %s FROM %s WHERE expires > now()`, cols, lt),
		holder:  fmt.Sprintf(`SELECT holder, expires FROM %s WHERE name = $1`, lt),
		token:   fmt.Sprintf(`SELECT token FROM %s WHERE name = $1`, lt),

		// The fleet's intent lock is taken before the seq is drawn and held to
		// the commit, so a fleet's intents commit in Seq order: a reader that
		// sees one sees every earlier one (see PutIntent).
		putIntent: fmt.Sprintf(`WITH l AS (SELECT pg_advisory_xact_lock(hashtext(%s), hashtext($1)))
INSERT INTO %s (fleet, data) SELECT $1, $2 FROM l RETURNING seq`, quoteLiteral(it), it),
		intents:      fmt.Sprintf(`SELECT seq, data FROM %s ORDER BY seq`, it),
		intentsF:     fmt.Sprintf(`SELECT seq, data FROM %s WHERE fleet = $1 ORDER BY seq`, it),
		intentsAfter: fmt.Sprintf(`SELECT seq, data FROM %s WHERE fleet = $1 AND seq > $2 ORDER BY seq`, it),
		releaseIntents: fmt.Sprintf(`SELECT seq, data FROM %s WHERE fleet = $1 AND seq > $2
			AND (data->>'Kind' = 'delete' OR (data->>'Kind' = 'release' AND data->>'InstanceID' = $3)) ORDER BY seq`, it),
		ack:       fmt.Sprintf(`DELETE FROM %s WHERE fleet = $1 AND seq <= $2`, it),
		ackFenced: fmt.Sprintf(lockLease+`DELETE FROM %s WHERE fleet = $1 AND seq <= $2 AND (SELECT token FROM l) = $4`, lt, 3, it),
	}
}
