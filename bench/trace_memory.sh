#!/usr/bin/env bash
# Peak memory of a long run with --profiler trace against --profiler none: what the trace's
# spans and its writing hold. A small model (batch 8 of 256 samples) so that the steps are
# many and quick. Prints each variant's peak RSS, its wall time and trace.json's size.
# Needs GNU time (/usr/bin/time, Debian package "time").
# Usage: bench/trace_memory.sh [STEPS=80000]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/release/ddpscope"
steps=${1:-80000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-8s %8s %15s %8s %12s\n' profiler steps "peak RSS (MiB)" wall "trace.json"
for profiler in none trace; do
  /usr/bin/time -f '%M %e' -o "$out/time" "$bin" train --profiler "$profiler" --max-steps "$steps" \
    --dataset-size 256 --batch-size 8 --max-epochs 100000 --progress-bar off \
    --default-root-dir "$out" --version "$profiler" >/dev/null
  read -r rss_kb wall <"$out/time"
  trace="$out/ddpscope_logs/$profiler/trace.json"
  size=$([[ -f $trace ]] && echo "$(($(stat -c %s "$trace") / 1000000)) MB" || echo "—")
  printf '%-8s %8s %15s %7ss %12s\n' "$profiler" "$steps" "$((rss_kb / 1024))" "$wall" "$size"
done
