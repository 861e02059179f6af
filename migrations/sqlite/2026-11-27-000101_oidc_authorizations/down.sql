DROP TABLE oidc_authorizations;
