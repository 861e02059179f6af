-- Authorization codes gain an id (`ac_<id>_<secret>`, see crates/oauth/src/code.rs): grants are
-- found by it, time-ordered, instead of by the code's random hash. A grant stored before has no
-- id of its own: its hash is its id, which is how a code of the first format is looked up.
ALTER TABLE oauth_grants ADD COLUMN code_id TEXT;
UPDATE oauth_grants SET code_id = code_hash;
ALTER TABLE oauth_grants ALTER COLUMN code_id SET NOT NULL;
ALTER TABLE oauth_grants DROP CONSTRAINT oauth_grants_pkey;
ALTER TABLE oauth_grants ADD PRIMARY KEY (code_id);
