#!/usr/bin/env bash
# pgbench against the Pistou gateway (a fresh `pistou demo` cluster) and against the local
# PostgreSQL (SERIALIZABLE) with the same transfer script; prints pgbench's summaries.
# Usage: crates/gateway/bench/pgbench.sh [seconds] [clients]   (after cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/../../.."
secs=${1:-15}; clients=${2:-4}; port=15450
script=crates/gateway/bench/transfer.sql
setup=$(mktemp)
{
  echo "DROP TABLE IF EXISTS bench_accounts;"
  echo "CREATE TABLE bench_accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL);"
  printf "INSERT INTO bench_accounts VALUES "; seq 1 1000 | sed 's/.*/(&, 1000)/' | paste -sd, -; echo ";"
} > "$setup"
target/release/pistou demo --no-shell --port $port > /tmp/pistou-pgbench-demo.log 2>&1 &
demo=$!
trap 'kill -INT $demo 2>/dev/null; wait $demo 2>/dev/null; rm -f "$setup"' EXIT
for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p $port && break; sleep 0.2; done
sleep 1 # the sample data is loaded before the gateway accepts; give writebacks a moment
psql -q -h 127.0.0.1 -p $port -U pistou pistou -f "$setup" 2>/dev/null
for mode in simple extended; do
  echo "== Pistou gateway, $mode"
  pgbench -h 127.0.0.1 -p $port -U pistou -n -f $script -c "$clients" -j 2 -T "$secs" --max-tries=20 -M $mode pistou 2>&1 | grep -E "processed|failed|retried|latency|tps"
done
echo "== Pistou total (must be 1000000): $(psql -h 127.0.0.1 -p $port -U pistou pistou -tA -c 'SELECT sum(balance) FROM bench_accounts')"
psql -q -h 127.0.0.1 -p 5432 -U postgres test -f "$setup" 2>/dev/null
for mode in simple extended; do
  echo "== PostgreSQL SERIALIZABLE, $mode"
  PGOPTIONS='-c default_transaction_isolation=serializable' pgbench -h 127.0.0.1 -p 5432 -U postgres -n -f $script -c "$clients" -j 2 -T "$secs" --max-tries=20 -M $mode test 2>&1 | grep -E "processed|failed|retried|latency|tps"
done
psql -q -h 127.0.0.1 -p 5432 -U postgres test -c "DROP TABLE bench_accounts"
