#!/usr/bin/env bash
# PostgreSQL 15's pgbench with its built-in workloads, unmodified: `pgbench -i -s <scale>`
# (load), then the select-only (-S) and TPC-B-like scripts, against the Pistou gateway (a
# fresh `pistou demo` cluster in a temporary directory) and against the local PostgreSQL
# (database pgbench_cmp, SERIALIZABLE). TPC-B-like runs with pgbench retrying serialization
# failures up to 50 times, then without retries. Prints pgbench's summaries.
# Usage: crates/gateway/bench/pgbench_builtin.sh [scale] [seconds] [clients]
#        (after cargo build --release -p pistou-cli)
set -euo pipefail
cd "$(dirname "$0")/../../.."
scale=${1:-10}; secs=${2:-30}; clients=${3:-4}; port=15460
dir=$(mktemp -d)
target/release/pistou demo --no-shell --dir "$dir" --port $port > /tmp/pistou-pgbench-builtin.log 2>&1 &
demo=$!
trap 'kill -INT $demo 2>/dev/null; wait $demo 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p $port && break; sleep 0.2; done
sleep 1
summary() { grep -E "done in|processed|failed|retried|latency average|tps"; }
echo "== Pistou gateway: pgbench -i -s $scale"
/usr/bin/time -f "wall %e s" pgbench -i -s "$scale" -h 127.0.0.1 -p $port -U pistou pistou 2>&1 | summary || true
for mode in "-S" "--max-tries=50" "--max-tries=1"; do
  echo "== Pistou gateway: pgbench $mode -c $clients -T $secs"
  pgbench $mode -h 127.0.0.1 -p $port -U pistou -c "$clients" -j 2 -T "$secs" pistou 2>&1 | summary || true
done
echo "== Pistou demo RSS: $(ps -o rss= -p $demo | awk '{printf "%.0f MiB", $1/1024}')"
psql -q -h 127.0.0.1 -p 5432 -U postgres test -c "DROP DATABASE IF EXISTS pgbench_cmp" -c "CREATE DATABASE pgbench_cmp"
echo "== PostgreSQL: pgbench -i -s $scale"
/usr/bin/time -f "wall %e s" pgbench -i -s "$scale" -h 127.0.0.1 -p 5432 -U postgres pgbench_cmp 2>&1 | summary
for mode in "-S" "--max-tries=50" "--max-tries=1"; do
  echo "== PostgreSQL SERIALIZABLE: pgbench $mode -c $clients -T $secs"
  PGOPTIONS='-c default_transaction_isolation=serializable' pgbench $mode -h 127.0.0.1 -p 5432 -U postgres \
    -c "$clients" -j 2 -T "$secs" pgbench_cmp 2>&1 | summary
done
psql -q -h 127.0.0.1 -p 5432 -U postgres test -c "DROP DATABASE pgbench_cmp"
