DROP TABLE refresh_tokens;
DROP TABLE fido_challenges;
DROP TABLE devices;
DROP TABLE enrollments;
DROP TABLE end_users;
