DROP FUNCTION idc_create_consent_sessions;
DROP FUNCTION idc_apply_charges;
DROP FUNCTION idc_write_outbox;
