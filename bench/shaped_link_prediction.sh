#!/usr/bin/env bash
# The doctor's prediction on a shaped link (docs/interconnects.md): two namespace
# hosts at RATE in both directions, the doctor fits its model there (--devices 1,2, 3 epochs),
# then predicts 2 devices at each batch size given, for 10 epochs, and each prediction is
# set against the median of RUNS runs of that configuration across the hosts. Needs root.
# Usage: [DDPSCOPE_BIN=...] [RATE=1gbit] [RUNS=5] [FITS=1] bench/shaped_link_prediction.sh [BATCH...]
# (default batch sizes: 32 128). Prints one line per fit and batch size.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${DDPSCOPE_BIN:-$root/build/release/ddpscope}"
rate=${RATE:-1gbit}
runs=${RUNS:-5}
fits=${FITS:-1}
batches=("$@")
((${#batches[@]})) || batches=(32 128)
cluster="$root/scripts/local-cluster"
out=$(mktemp -d)
trap '"$cluster" down >/dev/null 2>&1 || true; rm -rf "$out"' EXIT

"$cluster" up 2 --rate "$rate" >/dev/null
options=$("$cluster" options)
login=(ip netns exec ddpscope-login "$bin")
printf '%-4s %6s %10s %10s %22s %8s %8s\n' fit batch predicted median "runs (min-max)" error jitter
for ((fit = 0; fit < fits; fit++)); do
  dir="$out/fit$fit"
  mkdir -p "$dir"
  (cd "$dir" && "${login[@]}" doctor --devices 1,2 --num-nodes 2 --max-epochs 3 --mpirun-args "$options" >doctor.txt)
  model=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["model"]
print("%.1f%%" % (100 * m["jitter_fraction"]))' \
    "$dir/ddpscope_logs/version_0/doctor.json")
  for batch in "${batches[@]}"; do
    config=(--devices 2 --num-nodes 2 --batch-size "$batch" --max-epochs 10)
    predicted=$(cd "$dir" && "$bin" predict --json --from ddpscope_logs/version_0/doctor.json "${config[@]}" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["prediction"]["wall_seconds"])')
    walls=()
    for ((i = 0; i < runs; i++)); do
      run="$dir/b$batch-$i"
      mkdir -p "$run"
      (cd "$run" && DDPSCOPE_MPIRUN_ARGS="$options" "${login[@]}" train "${config[@]}" --progress-bar off \
        --logger none >/dev/null)
      walls+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_seconds"])' \
        "$run/ddpscope_logs/version_0/summary.json")")
    done
    python3 - "$fit" "$batch" "$predicted" "$model" "${walls[@]}" <<'PY'
import statistics, sys
fit, batch, predicted, model, walls = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sorted(map(float, sys.argv[5:]))
median = statistics.median(walls)
print(f"{fit:<4} {batch:>6} {predicted:9.3f}s {median:9.3f}s {walls[0]:10.3f}-{walls[-1]:.3f} s "
      f"{100 * (predicted / median - 1):+7.1f}% {model:>8}")
PY
  done
done
