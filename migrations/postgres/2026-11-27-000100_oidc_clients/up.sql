-- OpenID Connect clients (issue 34): one configuration per application (client_id = the
-- application's id). Lists and the client's key set are JSON text; the secret is a keyed hash
-- bound to the application, never the secret itself.
CREATE TABLE oidc_clients (
    application_id                 TEXT PRIMARY KEY NOT NULL,
    redirect_uris                  TEXT NOT NULL,
    post_logout_redirect_uris      TEXT NOT NULL,
    token_endpoint_auth_method     TEXT NOT NULL,
    jwks                           TEXT,
    jwks_uri                       TEXT,
    backchannel_delivery_mode      TEXT NOT NULL,
    backchannel_notification_uri   TEXT,
    require_pushed_requests        BOOLEAN NOT NULL,
    dpop_bound_tokens              BOOLEAN NOT NULL,
    profile                        TEXT NOT NULL,
    secret_hash                    TEXT,
    created_at                     BIGINT NOT NULL,
    updated_at                     BIGINT NOT NULL
);
