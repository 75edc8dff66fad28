-- Records of fleets and instances, as JSON with a version counting writes,
-- and small named values.
CREATE TABLE fleets (
    id      text PRIMARY KEY,        -- the fleet's name
    fleet   text NOT NULL,           -- the same name (every record table has the column)
    version bigint NOT NULL,
    data    jsonb NOT NULL,
    updated timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE instances (
    id      text PRIMARY KEY,        -- the instance's request id
    fleet   text NOT NULL,           -- its fleet, from its label
    version bigint NOT NULL,
    data    jsonb NOT NULL,
    updated timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX instances_fleet ON instances (fleet);

CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
