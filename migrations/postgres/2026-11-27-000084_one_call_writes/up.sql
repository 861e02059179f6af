-- Writes that take one round trip on PostgreSQL (ADR 0034). A PL/pgSQL function runs several
-- statements in one call — one message and one answer — and a call run on its own is one
-- transaction, so a write that used to cost BEGIN, its statements and COMMIT as separate round
-- trips costs one. The crate calls these in place of the statements they replace; SQLite keeps
-- the statements (no round trips there).

-- A change's webhook outbox: events (one array per column) and their deliveries, pending and
-- due when their event was created; each delivery takes its event's application, environment
-- and time. Returns the number of deliveries written.
CREATE FUNCTION idc_write_outbox(
    p_event_ids TEXT[], p_event_types TEXT[], p_applications TEXT[], p_environments TEXT[],
    p_bodies BYTEA[], p_created_at BIGINT[],
    p_delivery_ids TEXT[], p_delivery_events TEXT[], p_urls TEXT[], p_pending TEXT
) RETURNS INTEGER LANGUAGE plpgsql AS $$
DECLARE
    written INTEGER;
BEGIN
    WITH events AS (
        INSERT INTO webhook_events (id, event_type, application_id, environment, body, created_at)
        SELECT * FROM unnest(p_event_ids, p_event_types, p_applications, p_environments,
                             p_bodies, p_created_at)
        RETURNING id, application_id, environment, created_at)
    INSERT INTO webhook_deliveries
        (id, event_id, application_id, environment, url, status, next_attempt_at, created_at)
    SELECT d.id, d.event_id, e.application_id, e.environment, d.url, p_pending,
           e.created_at, e.created_at
    FROM unnest(p_delivery_ids, p_delivery_events, p_urls) AS d(id, event_id, url)
    JOIN events e ON e.id = d.event_id;
    GET DIAGNOSTICS written = ROW_COUNT;
    RETURN written;
END $$;

-- Counts each charge (merchant, metric, period; limit NULL = unlimited, still counted). The
-- conditional update is the limit check, so concurrent writers cannot pass it together.
-- Returns the metric of the first charge at its limit — the caller must then roll back, for
-- the charges before it were counted — or NULL when every charge was counted.
CREATE FUNCTION idc_apply_charges(
    p_merchants TEXT[], p_metrics TEXT[], p_periods TEXT[], p_limits BIGINT[]
) RETURNS TEXT LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. coalesce(cardinality(p_merchants), 0) LOOP
        INSERT INTO usage_counters (merchant_id, metric, period, used)
        VALUES (p_merchants[i], p_metrics[i], p_periods[i], 0)
        ON CONFLICT DO NOTHING;
        UPDATE usage_counters SET used = used + 1
        WHERE merchant_id = p_merchants[i] AND metric = p_metrics[i] AND period = p_periods[i]
          AND (p_limits[i] IS NULL OR used < p_limits[i]);
        IF NOT FOUND THEN
            RETURN p_metrics[i];
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- Creates a consent session, called on its own (one transaction): takes the recipient's
-- advisory lock, reads what the flood limits judge by, and — when both counts are under their
-- limits — inserts the session (status `p_pending`), counts its charges and writes its outbox. Returns whether it
-- created the session and what it read, from which the store names the refusal with the
-- consent crate's own rules (FloodLimits). A charge at its limit raises
-- 'quota exceeded: <metric>', which undoes the whole call.
--
-- Each statement of a VOLATILE function takes a fresh snapshot under READ COMMITTED, so the
-- read after the lock sees every session committed by the lock's previous holder.
CREATE FUNCTION idc_create_consent_session(
    p_lock_key TEXT, p_now BIGINT, p_window_start BIGINT,
    p_pending_limit INTEGER, p_window_limit INTEGER, p_pending TEXT, p_delivery_pending TEXT,
    p_id TEXT, p_application_id TEXT, p_client_id TEXT, p_environment TEXT, p_recipient TEXT,
    p_intent TEXT, p_transaction_type TEXT, p_transaction_description TEXT,
    p_amount_minor BIGINT, p_currency TEXT, p_payee TEXT, p_callback_url TEXT,
    p_created_at BIGINT, p_expires_at BIGINT,
    p_event_ids TEXT[], p_event_types TEXT[], p_applications TEXT[], p_environments TEXT[],
    p_bodies BYTEA[], p_event_created_at BIGINT[],
    p_delivery_ids TEXT[], p_delivery_events TEXT[], p_urls TEXT[],
    p_charge_merchants TEXT[], p_charge_metrics TEXT[], p_charge_periods TEXT[],
    p_charge_limits BIGINT[],
    OUT created BOOLEAN, OUT pending_expiries BIGINT[], OUT created_in_window BIGINT[]
) LANGUAGE plpgsql AS $$
DECLARE
    exceeded TEXT;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext(p_lock_key));
    -- `status || ''` keeps the plan on consent_sessions_by_recipient, as the store's own query.
    SELECT coalesce(array_agg(s.expires_at) FILTER (
               WHERE s.application_id = p_application_id AND s.status = p_pending
                 AND s.expires_at > p_now), '{}'),
           coalesce(array_agg(s.created_at) FILTER (WHERE s.created_at > p_window_start), '{}')
      INTO pending_expiries, created_in_window
      FROM consent_sessions s
     WHERE s.recipient = p_recipient AND s.environment = p_environment
       AND (s.created_at > p_window_start
            OR (s.application_id = p_application_id AND s.status || '' = p_pending
                AND s.expires_at > p_now));
    created := cardinality(pending_expiries) < p_pending_limit
           AND cardinality(created_in_window) < p_window_limit;
    IF created THEN
        INSERT INTO consent_sessions (id, application_id, client_id, environment, recipient,
            intent, transaction_type, transaction_description, amount_minor, currency, payee,
            callback_url, status, created_at, expires_at, decided_at)
        VALUES (p_id, p_application_id, p_client_id, p_environment, p_recipient, p_intent,
            p_transaction_type, p_transaction_description, p_amount_minor, p_currency, p_payee,
            p_callback_url, p_pending, p_created_at, p_expires_at, NULL);
        exceeded := idc_apply_charges(p_charge_merchants, p_charge_metrics, p_charge_periods,
                                      p_charge_limits);
        IF exceeded IS NOT NULL THEN
            RAISE EXCEPTION 'quota exceeded: %', exceeded;
        END IF;
        PERFORM idc_write_outbox(p_event_ids, p_event_types, p_applications, p_environments,
                                 p_bodies, p_event_created_at, p_delivery_ids, p_delivery_events,
                                 p_urls, p_delivery_pending);
    END IF;
END $$;
