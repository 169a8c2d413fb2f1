#!/usr/bin/env bash
# The pgbench transfer script through the gateway against one-shard clusters (f = 1, six
# replica processes) whose replicas keep their state with storage.sync = always (the
# default), with storage.sync = none (unsafe), and in memory (`cluster up --in-memory`), one
# after the other in the same run; prints pgbench's summaries and checks the total.
# Usage: crates/gateway/bench/pgbench_storage.sh [seconds] [clients]   (after cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/../../.."
secs=${1:-15}; clients=${2:-4}; base=15460; port=15459
pistou=target/release/pistou
script=crates/gateway/bench/transfer.sql
work=$(mktemp -d)
setup=$work/setup.sql
{
  echo "CREATE TABLE bench_accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL);"
  printf "INSERT INTO bench_accounts VALUES "; seq 1 1000 | sed 's/.*/(&, 1000)/' | paste -sd, -; echo ";"
} > "$setup"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=(); }
trap 'cleanup; rm -rf "$work"' EXIT
for mode in always none memory; do
  dir=$work/$mode
  $pistou init --dir "$dir" --base-port $base > /dev/null
  up=(cluster up --dir "$dir")
  case $mode in
    none) sed -i 's/^sync = "always"/sync = "none"/' "$dir/cluster.toml"; grep -q '^sync = "none"' "$dir/cluster.toml" ;;
    memory) up+=(--in-memory) ;;
  esac
  $pistou "${up[@]}" > "$work/up-$mode.log" 2>&1 & pids+=($!)
  for _ in $(seq 300); do grep -q "pistou cluster ready" "$work/up-$mode.log" && break; sleep 0.2; done
  $pistou gateway --config "$dir/cluster.toml" --listen 127.0.0.1:$port > "$work/gw-$mode.log" 2>&1 & pids+=($!)
  for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p $port && break; sleep 0.2; done
  psql -q -h 127.0.0.1 -p $port -U pistou pistou -f "$setup"
  echo "== Pistou gateway, storage $mode (extended protocol)"
  pgbench -h 127.0.0.1 -p $port -U pistou -n -f $script -c "$clients" -j 2 -T "$secs" --max-tries=20 -M extended pistou 2>&1 | grep -E "processed|failed|retried|latency|tps"
  echo "== total (must be 1000000): $(psql -h 127.0.0.1 -p $port -U pistou pistou -tA -c 'SELECT sum(balance) FROM bench_accounts')"
  cleanup
done
