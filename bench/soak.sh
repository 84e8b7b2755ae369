#!/usr/bin/env bash
# Soak: 10^6 optimizer steps of a small model, with the process's resident memory sampled
# every second; prints the samples and the growth after warm-up (should be ~0).
# Usage: bench/soak.sh [STEPS=1000000]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
steps=${1:-1000000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$root/build/release/ddpscope" train --dataset-size 1024 --batch-size 16 --hidden-size 16 --hidden-layers 1 \
  --max-epochs -1 --max-steps "$steps" --check-val-every-n-epoch 100 --logger csv,jsonl,tensorboard \
  --progress-bar off --default-root-dir "$out" >"$out/stdout" &
pid=$!
samples=()
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [[ -n "$rss" ]] && samples+=("$rss")
  sleep 1
done
wait "$pid"
tail -n 1 "$out/stdout"
grep -h "\"optimizer_steps\"" "$out"/ddpscope_logs/*/summary.json
echo "RSS samples (KiB, one per second): ${samples[*]}"
n=${#samples[@]}
if ((n >= 4)); then
  warm=${samples[2]}
  peak=$(printf '%s\n' "${samples[@]}" | sort -n | tail -n 1)
  echo "after warm-up (sample 3): ${warm} KiB; peak ${peak} KiB; last ${samples[n-1]} KiB; growth $((samples[n-1] - warm)) KiB"
fi
