DROP TABLE identity_sandbox_days;
