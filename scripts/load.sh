#!/usr/bin/env bash
# Load tests of signed requests against the release binary, on SQLite (default) or PostgreSQL.
#
#   scripts/load.sh consents         signed POST /v1/consents/auth (issue 4)
#   scripts/load.sh oauth-exchange   signed POST /v1/oauth/token (issue 6)
#   scripts/load.sh mandates         signed POST /v1/service/mandates (issue 14)
#   scripts/load.sh qr-image         GET /v1/qr/{id}/image, no auth (issue 14)
#   scripts/load.sh signatures       signed POST /v1/signature/documents, 1 MiB PDF (issue 15)
#   scripts/load.sh identity         signed POST /v1/identity/verify, generated passport + selfie,
#                                    analysed meanwhile (IDC_IDENTITY_WORKERS; models from
#                                    data/models, scripts/setup-identity.sh) (issue 16)
#
# The server runs pinned to core 0, the load generator (tests/src/bin/loadgen/) to core 1.
# Each request is signed afresh (signatures are accepted once, so oha/wrk cannot be used).
# consents: each request names a new recipient (flood limits are per recipient); the response
# carries the QR PNG. oauth-exchange: CODES authorization codes are prepared first (request,
# sandbox approval, status read; unmeasured), then exchanged, each once, with PKCE.
# The application's callbackUrl is the load generator's own webhook receiver (answers 204), so
# webhooks are really delivered during the run, by the same server core, as in production.
#
# Server CPU is printed twice: loadgen's "server CPU while measuring" counts the measured
# window alone (the figure to compare); the script's own line below it also counts warm-up,
# code preparation and setup, an upper bound. On PostgreSQL, "database CPU while measuring"
# is the same count for the cluster's processes.
#
# Knobs: DURATION=20 CONNECTIONS="64 32" IDC_HTTP_WORKERS=1 SERVER_CPU=0 LOAD_CPU=1 PORT=18080
#        RECEIVER_PORT=18090 CALLBACK_URL=… (e.g. http://127.0.0.1:9/hooks: nobody listens)
#        MEASURE_FLAG=/tmp/idc-measuring (created while measuring; empty to skip)
#        CODES=… (oauth-exchange: codes per run; default enough for 10,000/s)
#        RATE=… (open loop at this many requests/s; default closed loop)
#        SERVER_LOG=… (keep the server's log there; IDC_LOG picks what it holds)
#        IDCONSENT_BIN=… (measure this server binary instead of the one just built, e.g. a copy
#        of another commit's, to compare two builds in alternating runs)
#        SKIP_BUILD=1 (use the release binaries already in $CARGO_TARGET_DIR as they are)
#        IDC_RATE_LIMITS=false (the rate-limit gate only counts calls: measures the gate's cost)
#        POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test (run on PostgreSQL instead: a fresh
#        database is created next to that one for the run and dropped after; the cluster is the
#        one already running, unpinned: it shares the two cores with the server and the load)
#        NODES=2 (with POSTGRES_URL: a second server process on the same database, pinned to
#        SECOND_CPU=1 with its own data directory and the same master key; loadgen spreads its
#        connections over both; CPU per request and peak RSS are reported for both processes)
#        CALLGRIND=1 (the server runs under valgrind's callgrind, instrumented over the measured
#        window alone, and the run prints "instructions per request": a count that does not
#        drift with the machine's speed or its neighbours, for A/B of small changes; that run's
#        throughput and CPU mean nothing. Background workers run on the wall clock, so their
#        share per request is inflated 30–50×: compare like with like, CODES=2500 DURATION=12.)
set -euo pipefail
cd "$(dirname "$0")/.."

SCENARIO=${1:?usage: scripts/load.sh consents|oauth-exchange|mandates|qr-image|signatures|identity}

case $SCENARIO in
  consents|mandates|qr-image|signatures|identity) DURATION=${DURATION:-20} ;;
  oauth-exchange) DURATION=${DURATION:-10} ;;
  *) echo "unknown scenario $SCENARIO (consents | oauth-exchange | mandates | qr-image | signatures | identity)" >&2; exit 2 ;;
esac
WARMUP=${WARMUP:-2}
CODES=${CODES:-$(( (DURATION + WARMUP) * 10000 ))}
CONNECTIONS=${CONNECTIONS:-"64 32"}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PORT=${PORT:-18080}
RECEIVER_PORT=${RECEIVER_PORT:-18090}
NODES=${NODES:-1}
SECOND_CPU=${SECOND_CPU:-1}
if [ "$NODES" != 1 ] && { [ "$NODES" != 2 ] || [ -z "${POSTGRES_URL:-}" ]; }; then
  echo "NODES=2 needs POSTGRES_URL (processes share one PostgreSQL database)" >&2; exit 2
fi
MEASURE_FLAG=${MEASURE_FLAG-/tmp/idc-measuring}
export IDC_HTTP_WORKERS=${IDC_HTTP_WORKERS:-1}
# The load runs on a sandbox key: lift the daily cap on sandbox verifications (docs/identity.md).
export IDC_SANDBOX_VERIFICATIONS_PER_DAY=${IDC_SANDBOX_VERIFICATIONS_PER_DAY:-1000000000}

if [ -z "${SKIP_BUILD:-}" ]; then
  echo "==> building the release binary and the load generator"
  cargo build --release -q -p idconsent-server -p idconsent-e2e --bin idconsent --bin loadgen
fi
TARGET=${CARGO_TARGET_DIR:-target}
SERVER_BIN=${IDCONSENT_BIN:-$TARGET/release/idconsent}

DATA=$(mktemp -d /tmp/idc-load.XXXXXX)
SERVER_PID=
cleanup() {
  if [ -n "$MEASURE_FLAG" ]; then rm -f "$MEASURE_FLAG"; fi
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [ -n "${SECOND_PID:-}" ]; then
    kill "$SECOND_PID" 2>/dev/null || true
    wait "$SECOND_PID" 2>/dev/null || true
    rm -rf "$SECOND_DATA"
  fi
  if [ -n "${LOAD_DB:-}" ]; then psql -q "$POSTGRES_URL" -c "DROP DATABASE IF EXISTS $LOAD_DB" || true; fi
  rm -rf "$DATA"
}
trap cleanup EXIT

B=http://127.0.0.1:$PORT
if [ -n "${POSTGRES_URL:-}" ]; then
  LOAD_DB=idc_load_$$
  psql -q "$POSTGRES_URL" -c "CREATE DATABASE $LOAD_DB"
  DATABASE_URL="${POSTGRES_URL%/*}/$LOAD_DB"
  echo "==> starting idconsent on core $SERVER_CPU (IDC_HTTP_WORKERS=$IDC_HTTP_WORKERS), PostgreSQL database $LOAD_DB"
else
  DATABASE_URL=sqlite://$DATA/idconsent.db
  echo "==> starting idconsent on core $SERVER_CPU (IDC_HTTP_WORKERS=$IDC_HTTP_WORKERS), SQLite in $DATA"
fi
SERVER_WRAP=()
READY_TRIES=100
if [ "${CALLGRIND:-0}" = 1 ]; then
  command -v callgrind_control >/dev/null || { echo "CALLGRIND=1 needs valgrind (Debian: apt-get install valgrind)" >&2; exit 2; }
  SERVER_WRAP=(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$DATA/callgrind.out")
  READY_TRIES=3000
fi
IDC_IDENTITY_MODELS_DIR=${IDC_IDENTITY_MODELS_DIR:-$PWD/data/models} IDC_MODE=dev IDC_DATA_DIR=$DATA IDC_DATABASE_URL=$DATABASE_URL IDC_BIND=127.0.0.1:$PORT \
  IDC_LOG_FORMAT=json taskset -c "$SERVER_CPU" "${SERVER_WRAP[@]}" "$SERVER_BIN" serve 2>"${SERVER_LOG:-$DATA/server.log}" &
SERVER_PID=$!
for _ in $(seq 1 "$READY_TRIES"); do
  curl -sf "$B/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
ALSO_URL=()
if [ "$NODES" = 2 ]; then
  # Same database, same master key (sealed secrets and OAuth keys are shared), own data dir.
  SECOND_DATA=$(mktemp -d /tmp/idc-load2.XXXXXX)
  SECOND_PORT=$((PORT + 1))
  echo "==> starting a second idconsent on core $SECOND_CPU, port $SECOND_PORT, same database"
  IDC_MASTER_KEY=$(tr -d '\n' <"$DATA/master.key") IDC_ADMIN_TOKEN=$(cat "$DATA/admin.token") \
    IDC_IDENTITY_MODELS_DIR=${IDC_IDENTITY_MODELS_DIR:-$PWD/data/models} IDC_MODE=dev \
    IDC_DATA_DIR=$SECOND_DATA IDC_DATABASE_URL=$DATABASE_URL IDC_BIND=127.0.0.1:$SECOND_PORT \
    IDC_LOG_FORMAT=json taskset -c "$SECOND_CPU" "$SERVER_BIN" serve 2>"$SECOND_DATA/server.log" &
  SECOND_PID=$!
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$SECOND_PORT/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  ALSO_URL=(--also-url "http://127.0.0.1:$SECOND_PORT")
fi

echo "==> registering a merchant and creating an application (sandbox key)"
REGISTERED=$(curl -sf "$B/v1/merchants/register" -H 'Content-Type: application/json' -d '{
  "businessName": "Load Shop", "contactName": "Ada", "email": "load@shop.example",
  "password": "correct horse battery staple", "entityType": "llc", "registrationNumber": "HRB-42",
  "dateRegistered": "2019-03-04", "industry": "retail", "phone": "+15550000001"}')
TOKEN=$(jq -r .data.token <<<"$REGISTERED")
# Every signed request passes the plan rate-limit gate (IDC_RATE_LIMITS, default on): an
# enterprise plan with limits out of reach measures the gate's cost, not its refusals.
MERCHANT=$(jq -r .data.merchant.id <<<"$REGISTERED")
curl -sf -X POST "$B/v1/admin/merchants/$MERCHANT/plan" -H "Authorization: Bearer $(cat "$DATA/admin.token")" \
  -H 'Content-Type: application/json' \
  -d '{"plan":"enterprise","limits":{"requestsPerMinute":10000000,"requestsPerDay":null,"concurrent":100000}}' >/dev/null \
  || echo "(no plan endpoint: a build from before billing, measured without its gate)"
APP=$(curl -sf "$B/v1/merchants/applications" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' \
  -d "{\"name\": \"Load\", \"callbackUrl\": \"http://127.0.0.1:$RECEIVER_PORT/hooks\",
       \"redirectUris\": [\"https://shop.example/oauth/callback\"]}")
APPLICATION=$(jq -c '.data.application // .application' <<<"$APP")
KEY=$(jq -r .credentials.sandbox.apiKey <<<"$APPLICATION")
SECRET=$(jq -r .credentials.sandbox.secret <<<"$APPLICATION")
CLIENT_ID=$(jq -r .clientId <<<"$APPLICATION")
[ -n "$KEY" ] && [ "$KEY" != null ] || { echo "no API key in: $APP" >&2; exit 1; }

CALLBACK_ARGS=(--receiver "127.0.0.1:$RECEIVER_PORT")
# RATE=3200: open loop, requests started on schedule whatever the answers (latency counted from
# each request's scheduled start), instead of each connection waiting for its last answer.
[ -n "${RATE:-}" ] && CALLBACK_ARGS+=(--rate "$RATE")
[ -n "${CALLBACK_URL:-}" ] && CALLBACK_ARGS+=(--callback-url "$CALLBACK_URL")

# utime + stime of the server process(es), in clock ticks.
server_cpu_ticks() {
  cat "/proc/$SERVER_PID/stat" ${SECOND_PID:+"/proc/$SECOND_PID/stat"} | awk '{sum += $14 + $15} END {print sum}'
}

# VmHWM of the server process(es), e.g. "65504 kB" or "65504 kB, second process 60000 kB".
peak_rss() {
  local second=""
  [ -n "${SECOND_PID:-}" ] && second=", second process $(awk '/VmHWM/ {print $2 " " $3}' "/proc/$SECOND_PID/status")"
  echo "$(awk '/VmHWM/ {print $2 " " $3}' "/proc/$SERVER_PID/status")$second"
}

# Sets VmHWM back to the current RSS (proc(5), clear_refs "5"); where the kernel refuses, the
# peak stays the process's lifetime peak, and says so.
reset_peak_rss() {
  local pid
  for pid in "$SERVER_PID" ${SECOND_PID:+"$SECOND_PID"}; do
    echo 5 >"/proc/$pid/clear_refs" 2>/dev/null || echo "(cannot reset the peak RSS of $pid: it is the lifetime peak)"
  done
}

# The measuring window: other builds on this machine wait while the flag exists.
if [ -n "$MEASURE_FLAG" ]; then touch "$MEASURE_FLAG"; fi
run=100
for connections in $CONNECTIONS; do
  echo
  echo "==> $connections connections, ${DURATION} s (server on core $SERVER_CPU, loadgen on core $LOAD_CPU)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); rustc processes: $(pgrep -c rustc || true)"
  ticks_before=$(server_cpu_ticks)
  # Peak RSS of this run alone: the high-water mark so far (start-up, the merchant's sign-up and
  # its Argon2 hash of ~19 MiB, earlier runs) is kept, then reset to the current RSS.
  hwm_before=$(peak_rss)
  reset_peak_rss
  # PostgreSQL's processes (its backends for the server's pool are open by now): their CPU
  # per request is printed too. The cluster may serve others; on this machine it does not.
  DATABASE_PIDS=()
  if [ -n "${POSTGRES_URL:-}" ]; then
    for pid in $(pgrep -x postgres || true); do DATABASE_PIDS+=(--database-pid "$pid"); done
  fi
  # PostgreSQL plans prepared statements once per connection and keeps a generic plan; on a
  # database created for this run, those plans were made for empty tables (sequential scans)
  # and autovacuum's ANALYZE (a minute apart) would come after the run. A database in service
  # has statistics: ANALYZE once the warm-up has filled the tables, so the measured window
  # runs on the plans of a database in service. ANALYZE_AFTER_WARMUP=0 measures without it.
  if [ -n "${LOAD_DB:-}" ] && [ "${ANALYZE_AFTER_WARMUP:-1}" = 1 ]; then
    (sleep "$WARMUP"; psql -q "$DATABASE_URL" -c ANALYZE) &
  fi
  taskset -c "$LOAD_CPU" "$TARGET/release/loadgen" --url "$B" --api-key "$KEY" --secret "$SECRET" \
    --client-id "$CLIENT_ID" --connections "$connections" --duration "$DURATION" --run "$run" \
    --warmup "$WARMUP" --scenario "$SCENARIO" --codes "$CODES" "${CALLBACK_ARGS[@]}" "${ALSO_URL[@]}" \
    --server-pid "$SERVER_PID" ${SECOND_PID:+--server-pid "$SECOND_PID"} "${DATABASE_PIDS[@]}" \
    ${SERVER_WRAP[0]:+--window-hook "$PWD/scripts/callgrind-window.sh $SERVER_PID"} \
    | tee "$DATA/run-$run.txt"
  ticks_after=$(server_cpu_ticks)
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  # Server CPU (user + system) over warm-up and measurement, per measured request: an upper
  # bound (warm-up requests and webhook deliveries are in the numerator only).
  requests=$(sed -n 's/^requests \([0-9]*\):.*/\1/p' "$DATA/run-$run.txt")
  if [ -n "$requests" ] && [ "$requests" -gt 0 ]; then
    echo "server CPU: $(( (ticks_after - ticks_before) * 1000000 / $(getconf CLK_TCK) / requests )) µs per request (upper bound, all processes); peak RSS: $(peak_rss) during the run (before it: $hwm_before)"
    if [ -n "${SERVER_WRAP[0]:-}" ]; then
      # The window's dump is the newest callgrind.out.<n>.
      dump=$(ls -t "$DATA"/callgrind.out.* 2>/dev/null | head -1)
      total=$(callgrind_annotate "$dump" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
      echo "instructions per request (callgrind, measured window): $(( ${total:-0} / requests ))"
    fi
  fi
  run=$((run + 1))
  # Let the webhook backlog of this run drain before the next one.
  sleep "${SETTLE:-5}"
done
if [ -n "$MEASURE_FLAG" ]; then rm -f "$MEASURE_FLAG"; fi
