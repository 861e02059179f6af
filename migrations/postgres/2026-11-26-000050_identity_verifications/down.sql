DROP TABLE identity_verifications;
