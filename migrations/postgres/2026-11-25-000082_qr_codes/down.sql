DROP TABLE qr_codes;
