-- Leases with fencing tokens (rows are never deleted, so tokens never
-- repeat), and intents waiting for the replica that holds their fleet.
CREATE TABLE leases (
    name      text PRIMARY KEY,
    holder    text NOT NULL,
    token     bigint NOT NULL,
    expires   timestamptz NOT NULL,  -- by the database's clock
    ttl_micro bigint NOT NULL
);

CREATE TABLE intents (
    seq      bigserial PRIMARY KEY,
    fleet    text NOT NULL,
    data     jsonb NOT NULL,
    recorded timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX intents_fleet ON intents (fleet, seq);
