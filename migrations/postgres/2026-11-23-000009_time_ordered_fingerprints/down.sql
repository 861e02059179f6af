UPDATE request_fingerprints
   SET fingerprint = substr(fingerprint, position(':' in fingerprint) + 1)
 WHERE position(':' in fingerprint) > 0;
