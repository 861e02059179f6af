DROP TABLE oauth_signing_keys;
