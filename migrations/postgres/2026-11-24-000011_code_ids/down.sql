ALTER TABLE oauth_grants DROP CONSTRAINT oauth_grants_pkey;
ALTER TABLE oauth_grants ADD PRIMARY KEY (code_hash);
ALTER TABLE oauth_grants DROP COLUMN code_id;
