-- Issue 31 §6: idc_create_consent_sessions (000084) takes the batch's usage counter rows in one
-- fixed order before its loop, as it takes the recipients' advisory locks, so that two
-- processes' batches charging the same merchants in other orders cannot deadlock. The
-- signature and the answers are unchanged.

-- Creates a batch of consent sessions in one call — the creates that arrive together, with one
-- commit for them all (group commit, ADR 0035) — each judged as if alone, in arrival order: the
-- flood counts of its recipient and, when both are under their limits, the session, its charges
-- and its outbox. Returns one row per session: whether it was created, the flood read it was
-- judged by (the store names a refusal from it with the consent crate's own FloodLimits), and
-- the metric of a charge at its limit (that session is then not created, and its charges
-- counted before are given back).
--
-- Every recipient's advisory lock is taken first, in the order of the lock's number, then every
-- usage counter row the batch may charge, in the order of (merchant, metric, period), so that
-- batches running at once on other connections or processes never wait for each other in a
-- cycle; rows are written only after. (000084 locked the counter rows as each create came: two
-- processes' batches charging merchants [A, B] and [B, A] each held one row the other needed,
-- and PostgreSQL failed one batch with every create in it — issue 31 §6.) Each statement of a
-- VOLATILE function takes a fresh snapshot under READ COMMITTED, so a flood read sees every
-- session committed by the lock's previous holder, and the sessions created earlier in the
-- batch.
CREATE OR REPLACE FUNCTION idc_create_consent_sessions(
    p_lock_keys TEXT[], p_now BIGINT[], p_window_start BIGINT[],
    p_pending_limit INTEGER[], p_window_limit INTEGER[], p_pending TEXT, p_delivery_pending TEXT,
    p_ids TEXT[], p_application_ids TEXT[], p_client_ids TEXT[], p_environments TEXT[],
    p_recipients TEXT[], p_intents TEXT[], p_transaction_types TEXT[],
    p_transaction_descriptions TEXT[], p_amounts_minor BIGINT[], p_currencies TEXT[],
    p_payees TEXT[], p_callback_urls TEXT[], p_created_at BIGINT[], p_expires_at BIGINT[],
    -- the outboxes: each event names its session's position in the batch
    p_event_items INTEGER[], p_event_ids TEXT[], p_event_types TEXT[], p_event_applications TEXT[],
    p_event_environments TEXT[], p_event_bodies BYTEA[], p_event_created_at BIGINT[],
    p_delivery_ids TEXT[], p_delivery_events TEXT[], p_urls TEXT[],
    -- the charges: each names its session's position in the batch
    p_charge_items INTEGER[], p_charge_merchants TEXT[], p_charge_metrics TEXT[],
    p_charge_periods TEXT[], p_charge_limits BIGINT[]
) RETURNS TABLE (item INTEGER, created BOOLEAN, pending_expiries BIGINT[],
                 created_in_window BIGINT[], exceeded TEXT)
LANGUAGE plpgsql
-- PL/pgSQL keeps a generic plan per statement and connection. Planned while the table is tiny
-- (a new deployment's first batches), the flood read's plan would be a sequential scan, kept as
-- the table grows: a 64-connection load test on a fresh database spent 0.7 ms per read. The
-- read is always one recipient's few rows through consent_sessions_by_recipient.
SET enable_seqscan = off
AS $$
DECLARE
    lock_number INTEGER;
    counter_merchant TEXT;
    counter_metric TEXT;
    counter_period TEXT;
    charge INTEGER;
    counted INTEGER[];
    admitted INTEGER[] := '{}';
BEGIN
    FOR lock_number IN
        SELECT DISTINCT hashtext(k) FROM unnest(p_lock_keys) AS k ORDER BY 1
    LOOP
        PERFORM pg_advisory_xact_lock(lock_number);
    END LOOP;
    -- Each counter row, created when missing, is locked here (ON CONFLICT DO UPDATE locks the
    -- row it finds, even when its WHERE updates nothing), so the charges below wait for no one.
    -- A create refused later leaves its counter at what it was (a row of 0 if it was new).
    FOR counter_merchant, counter_metric, counter_period IN
        SELECT DISTINCT c.merchant, c.metric, c.period
          FROM unnest(p_charge_merchants, p_charge_metrics, p_charge_periods)
               AS c(merchant, metric, period)
         ORDER BY 1, 2, 3
    LOOP
        INSERT INTO usage_counters (merchant_id, metric, period, used)
        VALUES (counter_merchant, counter_metric, counter_period, 0)
        ON CONFLICT (merchant_id, metric, period)
        DO UPDATE SET used = usage_counters.used WHERE false;
    END LOOP;
    FOR i IN 1 .. coalesce(cardinality(p_ids), 0) LOOP
        item := i;
        exceeded := NULL;
        -- `status || ''` keeps the plan on consent_sessions_by_recipient, as the store's query.
        SELECT coalesce(array_agg(s.expires_at) FILTER (
                   WHERE s.application_id = p_application_ids[i] AND s.status = p_pending
                     AND s.expires_at > p_now[i]), '{}'),
               coalesce(array_agg(s.created_at) FILTER (
                   WHERE s.created_at > p_window_start[i]), '{}')
          INTO pending_expiries, created_in_window
          FROM consent_sessions s
         WHERE s.recipient = p_recipients[i] AND s.environment = p_environments[i]
           AND (s.created_at > p_window_start[i]
                OR (s.application_id = p_application_ids[i] AND s.status || '' = p_pending
                    AND s.expires_at > p_now[i]));
        created := cardinality(pending_expiries) < p_pending_limit[i]
               AND cardinality(created_in_window) < p_window_limit[i];
        IF created THEN
            counted := '{}';
            FOR charge IN
                SELECT c.n FROM unnest(p_charge_items) WITH ORDINALITY AS c(it, n)
                 WHERE c.it = i ORDER BY c.n
            LOOP
                UPDATE usage_counters SET used = used + 1
                 WHERE merchant_id = p_charge_merchants[charge]
                   AND metric = p_charge_metrics[charge] AND period = p_charge_periods[charge]
                   AND (p_charge_limits[charge] IS NULL OR used < p_charge_limits[charge]);
                IF NOT FOUND THEN
                    exceeded := p_charge_metrics[charge];
                    EXIT;
                END IF;
                counted := counted || charge;
            END LOOP;
            IF exceeded IS NULL THEN
                INSERT INTO consent_sessions (id, application_id, client_id, environment,
                    recipient, intent, transaction_type, transaction_description, amount_minor,
                    currency, payee, callback_url, status, created_at, expires_at, decided_at)
                VALUES (p_ids[i], p_application_ids[i], p_client_ids[i], p_environments[i],
                    p_recipients[i], p_intents[i], p_transaction_types[i],
                    p_transaction_descriptions[i], p_amounts_minor[i], p_currencies[i],
                    p_payees[i], p_callback_urls[i], p_pending, p_created_at[i],
                    p_expires_at[i], NULL);
                admitted := admitted || i;
            ELSE
                created := false;
                FOREACH charge IN ARRAY counted LOOP
                    UPDATE usage_counters SET used = used - 1
                     WHERE merchant_id = p_charge_merchants[charge]
                       AND metric = p_charge_metrics[charge]
                       AND period = p_charge_periods[charge];
                END LOOP;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
    -- The created sessions' outboxes, in one statement.
    PERFORM idc_write_outbox(p_event_ids, p_event_types, p_event_applications,
                             p_event_environments, p_event_bodies, p_event_created_at,
                             p_delivery_ids, p_delivery_events, p_urls, p_delivery_pending,
                             p_event_items, admitted);
END $$;
