#!/usr/bin/env bash
# End-to-end: the seed workload (--preset seed, 200 epochs) on 1 device and on N devices,
# run back to back; prints wall time, speedup and each rank's phases from summary.json.
# Usage: [DDPSCOPE_BIN=path/to/ddpscope] bench/seed_ddp.sh [N=2] [extra ddpscope options...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${DDPSCOPE_BIN:-$root/build/release/ddpscope}"  # DDPSCOPE_BIN: another build, e.g. for before/after
n=${1:-2}
shift || true
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for devices in 1 "$n"; do
  "$bin" train --preset seed --devices "$devices" --progress-bar off --default-root-dir "$out" \
    --version "d$devices" "$@" | tail -n 1
done
python3 - "$out" "$n" <<'PY'
import json, sys
out, n = sys.argv[1], sys.argv[2]
runs = {d: json.load(open(f"{out}/ddpscope_logs/d{d}/summary.json")) for d in ("1", n)}
one = runs["1"]["wall_seconds"]
for d, s in runs.items():
    wall = s["wall_seconds"]
    print(f"devices {d}: wall {wall:.2f} s, speedup {one / wall:.2f}, optimizer steps {s['optimizer_steps']}, "
          f"allreduce {s['allreduce']['calls']} calls {s['allreduce']['seconds']:.3f} s")
    for r, phases in enumerate(s["phases_per_rank"]):
        shown = ", ".join(f"{k} {v:.3f}" for k, v in phases.items() if v > 0)
        print(f"  rank {r}: {shown}; comm_wait {100 * phases['comm_wait'] / wall:.1f} % of wall")
PY
