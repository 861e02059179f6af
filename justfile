# Common tasks. `just --list` shows them; each is a plain command you can also type yourself.

pg_url := env_var_or_default("IDC_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")

# Run the service on the embedded SQLite database in ./data (dev mode).
run:
    cargo run -p idconsent-server --bin idconsent -- serve

# All tests; the PostgreSQL half skips with a note unless IDC_TEST_DATABASE_URL is set.
test:
    cargo test --workspace

# All tests with PostgreSQL required.
test-pg:
    IDC_TEST_DATABASE_URL={{pg_url}} REQUIRE_BACKENDS=sqlite,postgres cargo test --workspace

# Format check, clippy with warnings as errors, and the dependency rule.
lint:
    cargo fmt --all --check
    cargo clippy --all-targets -- -D warnings
    bash .ci/check-dependency-rule
    bash .ci/check-handler-imports

# Criterion benchmarks (figures go to docs/performance.md).
bench:
    cargo bench --workspace

# Signed POST /v1/consents/auth against the release binary on SQLite: server on core 0, load on
# core 1, 20 s at 64 then 32 connections (knobs in the script's header; figures in
# docs/performance.md).
load-consents:
    bash scripts/load.sh consents

# Signed POST /v1/oauth/token against the release binary on SQLite: codes prepared first, then
# exchanged for 10 s at 64 then 32 connections, server on core 0, load on core 1.
load-oauth-exchange:
    bash scripts/load.sh oauth-exchange

# What CI runs.
ci:
    bash .ci/run
