-- Version 2 (additive: version 1 still writes a version 2 store). Each run's content
-- checksum, which `store copy` verifies, and the table that records the schema version
-- and the oldest version that can still write the store. Version 1 writers leave the
-- checksum NULL; readers compute it when it is missing.
ALTER TABLE runs ADD COLUMN content_sha256 TEXT;
CREATE TABLE stackbench_meta (
    key   {bytewise_text} PRIMARY KEY,
    value TEXT NOT NULL
);
