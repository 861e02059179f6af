DROP TABLE hosted_confirmations;
