#!/usr/bin/env bash
# `ddpscope analyze` against Python's json.load (what Holistic Trace Analysis loads traces with)
# on one large Kineto trace, in the same run: wall time, CPU time and peak RSS of each. The trace is made
# here by repeating the 2-GPU NCCL fixture's events (40,573 of them, its steps renumbered and
# shifted in time) until the file reaches the size asked for; it is read plain and gzipped.
# Needs GNU time (/usr/bin/time, Debian package "time"). RUNS=N runs each reader N times (default 3)
# and shows its fastest run.
# Usage: bench/analyze_trace.sh [MEGABYTES=300]
# With BASELINE=PATH (another build's ddpscope), that build reads the same trace in the same run.
# It ends with the floor under any SAX reader: RapidJSON parsing the file in memory into nothing.
# With LAYOUT=kineto each event is written as Kineto writes it, one field per line, indented
# (what users' files look like); the default is one event per line, compact.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/release/ddpscope"
megabytes=${1:-300}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

python3 "$root/bench/repeat_trace.py" "$root/tests/analyze/fixtures/nccl_parser_config_nccl_data.json.gz" \
  "$out/big.json" "$megabytes" $([[ "${LAYOUT:-compact}" == kineto ]] && echo --kineto-layout)
gzip -k -1 "$out/big.json"
sync  # the new files written back before any reader runs
size_mb=$(($(stat -c %s "$out/big.json") / 1000000))
gz_mb=$(($(stat -c %s "$out/big.json.gz") / 1000000))

# Each reader runs RUNS times (default 3): its fastest run's wall and CPU time are shown (the
# machine is shared: a run another process slowed says nothing of the reader), with the largest
# peak RSS of all its runs. The fastest wall time is left in $wall.
measure() {  # label, command...
  local label=$1
  shift
  : >"$out/runs"
  for _ in $(seq "${RUNS:-3}"); do
    /usr/bin/time -f '%e %U %S %M' -o "$out/time" "$@" >"$out/stdout"
    cat "$out/time" >>"$out/runs"
  done
  sort -n "$out/runs" | awk -v label="$label" 'NR == 1 {wall = $1; cpu = $2 + $3} $4 > rss {rss = $4}
    END {printf "%-40s %8.2fs %8.2fs %10d MiB\n", label, wall, cpu, rss / 1024}'
  wall=$(sort -n "$out/runs" | head -1 | cut -d' ' -f1)
}
echo "trace: $size_mb MB of JSON ($gz_mb MB gzipped)"
printf '%-40s %9s %9s %14s\n' reader wall CPU "peak RSS"
measure "ddpscope analyze (.json)" "$bin" analyze --json "$out/big.json"
analyze_json=$wall
measure "ddpscope analyze (.json.gz)" "$bin" analyze --json "$out/big.json.gz"
analyze_gz=$wall
if [[ -n "${BASELINE:-}" ]]; then
  measure "baseline analyze (.json)" "$BASELINE" analyze --json "$out/big.json"
  measure "baseline analyze (.json.gz)" "$BASELINE" analyze --json "$out/big.json.gz"
fi
measure "python3 json.load (.json)" python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$out/big.json"
load_json=$wall
measure "python3 json.load (.json.gz, gzip.open)" python3 -c "import gzip, json, sys; json.load(gzip.open(sys.argv[1]))" \
  "$out/big.json.gz"
load_gz=$wall
awk -v a="$analyze_json" -v b="$load_json" -v c="$analyze_gz" -v d="$load_gz" \
  'BEGIN {printf "analyze against json.load, fastest runs: %.1fx (.json), %.1fx (.json.gz)\n", b / a, d / c}'
# The floor: RapidJSON's SAX parse alone, the file in memory, a handler that keeps nothing
# (bench/json_parse_floor_bench.cpp); its seconds exclude reading the file.
floor_bench="$root/build/release/bench/json_parse_floor_bench"
if [[ -x $floor_bench ]]; then
  "$floor_bench" "$out/big.json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("%-40s %8.2fs %24s" % ("RapidJSON SAX alone, iterative", d["iterative_seconds"], "(in memory)"))
print("%-40s %8.2fs %24s" % ("RapidJSON SAX alone, in place", d["in_place_seconds"], "(in memory)"))'
fi
