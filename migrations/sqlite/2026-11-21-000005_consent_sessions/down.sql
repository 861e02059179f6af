DROP TABLE consent_sessions;
