-- Instance records by provider id (Instance.ID inside the JSON), for a
-- call that names an instance by the id its provider gave it.
CREATE INDEX IF NOT EXISTS instances_provider_id ON instances ((data->'Instance'->>'ID'));
