DROP TABLE idempotency_keys;
DROP TABLE request_fingerprints;
DROP TABLE api_credentials;
DROP TABLE applications;
DROP TABLE one_time_codes;
DROP TABLE merchant_documents;
DROP TABLE merchant_users;
DROP TABLE merchants;
