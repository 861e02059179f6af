ALTER TABLE hosted_confirmations DROP COLUMN guesses;
