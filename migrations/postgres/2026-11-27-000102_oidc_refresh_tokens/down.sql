DROP TABLE oidc_refresh_tokens;
