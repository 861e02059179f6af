-- The consent batch function's own cost inside PostgreSQL, per create (docs/performance.md,
-- 2026-11-27 sixth session): batches of 64 creates, each committed alone, for 1, 8 or 64
-- merchants a batch. Run on a migrated database (any test database will do); to compare a
-- version of the function, create it under another name and pass `use_new => true`:
--   psql "$DATABASE_URL" -f scripts/bench-consent-batch.sql
--   psql "$DATABASE_URL" -Atc "CALL bench_consent_batch(false, 1, 200)"   -- µs per create
-- The procedure writes sessions and counters for made-up applications and merchants
-- (`app_bench`, `mer_bench_*`): use a scratch database.
CREATE OR REPLACE PROCEDURE bench_consent_batch(use_new BOOLEAN, merchants INTEGER, rounds INTEGER, INOUT result DOUBLE PRECISION DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  n INTEGER := 64; t0 TIMESTAMPTZ; total INTERVAL := '0'; r INTEGER;
  ids TEXT[]; recips TEXT[]; keys TEXT[]; ms TEXT[]; now_ms BIGINT := 1790000000000;
BEGIN
  FOR r IN 1..rounds LOOP
    SELECT array_agg('cs_' || md5(random()::text)), array_agg('+1555' || lpad((random()*9999999)::int::text, 7, '0')),
           array_agg('mer_bench_' || (g % merchants))
      INTO ids, recips, ms FROM generate_series(1, n) g;
    SELECT array_agg('consent:live:' || x) INTO keys FROM unnest(recips) x;
    t0 := clock_timestamp();
    IF use_new THEN
      PERFORM * FROM idc_new_consent_sessions(keys, array_fill(now_ms, ARRAY[n]), array_fill(now_ms - 3600000, ARRAY[n]),
        array_fill(3, ARRAY[n]), array_fill(100, ARRAY[n]), 'pending', 'pending',
        ids, array_fill('app_bench'::text, ARRAY[n]), array_fill('cli_bench'::text, ARRAY[n]), array_fill('live'::text, ARRAY[n]),
        recips, array_fill('LOGIN'::text, ARRAY[n]), array_fill('login'::text, ARRAY[n]), array_fill('Sign in'::text, ARRAY[n]),
        array_fill(0::bigint, ARRAY[n]), array_fill('EUR'::text, ARRAY[n]), array_fill('Shop'::text, ARRAY[n]), array_fill('https://x'::text, ARRAY[n]),
        array_fill(now_ms, ARRAY[n]), array_fill(now_ms + 300000, ARRAY[n]),
        '{}'::int[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::bytea[], '{}'::bigint[], '{}'::text[], '{}'::text[], '{}'::text[],
        (SELECT array_agg(g) FROM generate_series(1, n) g), ms, array_fill('consents'::text, ARRAY[n]), array_fill('2026-09'::text, ARRAY[n]), array_fill(NULL::bigint, ARRAY[n]));
    ELSE
      PERFORM * FROM idc_create_consent_sessions(keys, array_fill(now_ms, ARRAY[n]), array_fill(now_ms - 3600000, ARRAY[n]),
        array_fill(3, ARRAY[n]), array_fill(100, ARRAY[n]), 'pending', 'pending',
        ids, array_fill('app_bench'::text, ARRAY[n]), array_fill('cli_bench'::text, ARRAY[n]), array_fill('live'::text, ARRAY[n]),
        recips, array_fill('LOGIN'::text, ARRAY[n]), array_fill('login'::text, ARRAY[n]), array_fill('Sign in'::text, ARRAY[n]),
        array_fill(0::bigint, ARRAY[n]), array_fill('EUR'::text, ARRAY[n]), array_fill('Shop'::text, ARRAY[n]), array_fill('https://x'::text, ARRAY[n]),
        array_fill(now_ms, ARRAY[n]), array_fill(now_ms + 300000, ARRAY[n]),
        '{}'::int[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::bytea[], '{}'::bigint[], '{}'::text[], '{}'::text[], '{}'::text[],
        (SELECT array_agg(g) FROM generate_series(1, n) g), ms, array_fill('consents'::text, ARRAY[n]), array_fill('2026-09'::text, ARRAY[n]), array_fill(NULL::bigint, ARRAY[n]));
    END IF;
    total := total + (clock_timestamp() - t0);
    COMMIT;
  END LOOP;
  result := extract(epoch FROM total) * 1000000 / (rounds * n);
END $$;
