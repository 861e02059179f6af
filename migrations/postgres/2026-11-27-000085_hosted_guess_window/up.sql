-- Hosted approval pages (issue 31): wrong codes count per object and recipient across resends,
-- ten in any 24 hours. The times of the guesses still counted, in milliseconds, comma-separated
-- (a right code's guess is given back); a resend keeps them.
ALTER TABLE hosted_confirmations ADD COLUMN guesses TEXT NOT NULL DEFAULT '';
