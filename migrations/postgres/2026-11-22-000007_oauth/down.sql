DROP TABLE oauth_tokens;
DROP TABLE oauth_grants;
DROP TABLE oauth_requests;
