DROP TABLE signature_requests;
