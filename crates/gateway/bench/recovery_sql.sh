#!/usr/bin/env bash
# Recovery and catch-up of a replica holding ROWS SQL rows (default 1,000,000): loads them
# through the gateway into a one-shard durable cluster (f = 1), kills one replica with
# SIGKILL, lets `cluster up` restart it, and prints its "recovered" line (time to open, check
# and replay its log) and its "caught up" line, plus its resident memory afterwards.
# Usage: crates/gateway/bench/recovery_sql.sh [rows] [rows per INSERT]   (after cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/../../.."
rows=${1:-1000000}; batch=${2:-1000}; base=15480; port=15479
pistou=target/release/pistou
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap 'cleanup; rm -rf "$work"' EXIT
$pistou init --dir "$work/c" --base-port $base > /dev/null
$pistou cluster up --dir "$work/c" > "$work/up.log" 2>&1 & pids+=($!)
for _ in $(seq 300); do grep -q "pistou cluster ready" "$work/up.log" && break; sleep 0.2; done
$pistou gateway --config "$work/c/cluster.toml" --listen 127.0.0.1:$port --timeout 120 > "$work/gw.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p $port && break; sleep 0.2; done
psql -q -h 127.0.0.1 -p $port -U pistou pistou -c "CREATE TABLE items (id BIGINT PRIMARY KEY, grp INT NOT NULL, label TEXT NOT NULL)"
python3 - "$rows" "$batch" > "$work/load.sql" <<'PY'
import sys
rows, batch = int(sys.argv[1]), int(sys.argv[2])
for start in range(0, rows, batch):
    end = min(rows, start + batch)
    print("INSERT INTO items VALUES " + ",".join(f"({i},{i % 97},'item-{i:08d}')" for i in range(start, end)) + ";")
PY
started=$(date +%s.%N)
psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $port -U pistou pistou -f "$work/load.sql"
echo "loaded $rows rows in $(echo "$(date +%s.%N) - $started" | bc) s"
echo "count: $(psql -h 127.0.0.1 -p $port -U pistou pistou -tA -c 'SELECT count(*) FROM items')"
du -sh "$work/c/data/replica-s0-r2"
victim=$(grep -o 'pids=[0-9,]*' "$work/up.log" | head -1 | cut -d= -f2 | cut -d, -f3)
kill -KILL "$victim"
for _ in $(seq 600); do grep -q "caught up" "$work/c/logs/replica-s0-r2.log" 2>/dev/null && break; sleep 0.5; done
grep -h "recovered from the durable log\|caught up" "$work/c/logs/replica-s0-r2.log" | sed 's/^.*INFO //'
new=$(grep -o 'restarted id=s0r2 pid=[0-9]*' "$work/up.log" | tail -1 | cut -d= -f3)
echo "restarted replica RSS: $(ps -o rss= -p "$new" | awk '{printf "%.0f MiB", $1/1024}')"
