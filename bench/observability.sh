#!/usr/bin/env bash
# What observing costs on the seed workload (one device, accumulation 3): the profiler
# (none / simple / trace) and the device monitor (off / background / the seed's per-step
# probe). Variants run interleaved, ROUNDS times each; prints the median wall time of each
# and its cost relative to the bare run (--profiler none --monitor-interval-ms 0).
# Usage: bench/observability.sh [EPOCHS=100] [ROUNDS=3]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/release/ddpscope"
epochs=${1:-100}
rounds=${2:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
variants=(
  "bare|--profiler none --monitor-interval-ms 0"
  "profiler simple|--profiler simple --monitor-interval-ms 0"
  "profiler trace|--profiler trace --monitor-interval-ms 0"
  "monitor background|--profiler none --monitor-mode background"
  "monitor per-step|--profiler none --monitor-mode per-step"
)
for ((r = 0; r < rounds; r++)); do
  for i in "${!variants[@]}"; do
    # shellcheck disable=SC2086
    "$bin" train --accumulate-grad-batches 3 --max-epochs "$epochs" --progress-bar off --logger none \
      --default-root-dir "$out" --version "v${i}_r$r" ${variants[$i]#*|} >/dev/null
  done
done
python3 - "$out" "$rounds" "${variants[@]}" <<'PY'
import json, statistics, sys
out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
walls, monitor = [], []
for i, v in enumerate(variants):
    runs = [json.load(open(f"{out}/ddpscope_logs/v{i}_r{r}/summary.json")) for r in range(rounds)]
    walls.append(statistics.median(s["wall_seconds"] for s in runs))
    micro_batches = lambda s: s["epochs"] * -(-s["config"]["dataset_size"] // s["config"]["batch_size"])
    monitor.append(statistics.median(s["phases"]["monitor"] / micro_batches(s) for s in runs))
for i, v in enumerate(variants):
    name = v.split("|")[0]
    print(f"{name:20s} wall {walls[i]:7.3f} s  cost {100 * (walls[i] / walls[0] - 1):+6.2f} %"
          + (f"  (probe {1e6 * monitor[i]:.1f} us per micro-batch)" if monitor[i] > 0 else ""))
PY
