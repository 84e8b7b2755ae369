#!/usr/bin/env bash
# `ddpscope analyze` on a job of many ranks, made here from the 2-rank torch 2 fixture
# (tests/analyze/fixtures/torch2_gloo_slow_forward: rank 1 sleeps 20 ms in forward): each rank's
# file is rank 0's trace, its 4 steps repeated until the file reaches the size asked for, and
# one rank's (the straggler, STRAGGLER, by default RANKS/2+9: 137 of 256) is rank 1's. The files are hard links to
# two files written once (a rank's rank comes from its name, the world from distributedInfo), so
# a job of gigabytes costs the disk only two files; every file is read as a file of its own.
# Prints analyze's wall time, CPU time and peak RSS, the straggler it names and the length of
# its text and report, and Python's json.load on SAMPLE (default 16) of the files, in the same
# run. KEEP=DIR keeps the text and report.html there.
# Needs GNU time (/usr/bin/time, Debian package "time").
# Usage: bench/analyze_job.sh [RANKS=256] [MEGABYTES_PER_RANK=20]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${DDPSCOPE:-$root/build/release/ddpscope}"
ranks=${1:-256}
megabytes=${2:-20}
straggler=${STRAGGLER:-$((ranks / 2 + 9))}  # 137 of 256
sample=${SAMPLE:-16}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fixture="$root/tests/analyze/fixtures/torch2_gloo_slow_forward"
python3 "$root/bench/repeat_trace.py" "$fixture/rank0.pt.trace.json.gz" "$out/normal.json" "$megabytes" --world "$ranks"
python3 "$root/bench/repeat_trace.py" "$fixture/rank1.pt.trace.json.gz" "$out/slow.json" "$megabytes" --world "$ranks"
mkdir "$out/job"
for ((r = 0; r < ranks; r++)); do
  ln "$out/$([[ $r == "$straggler" ]] && echo slow || echo normal).json" "$out/job/rank$r.pt.trace.json"
done
file_mb=$(($(stat -c %s "$out/normal.json") / 1000000))
echo "job: $ranks ranks of $file_mb MB ($((ranks * file_mb)) MB of JSON), rank $straggler slowed 20 ms in forward"

/usr/bin/time -f '%e %U %S %M' -o "$out/time" "$bin" analyze --report "$out/report.html" "$out/job" >"$out/text"
read -r wall user sys rss_kb <"$out/time"
echo "ddpscope analyze: wall ${wall} s, CPU $(python3 -c "print(round($user + $sys, 2))") s, peak RSS $((rss_kb / 1024)) MiB"
echo "  its text: $(wc -l <"$out/text") lines; $(grep -E '^(Straggler|Slower rank|No straggler)' "$out/text" | head -1)"
echo "  its report: $(($(stat -c %s "$out/report.html") / 1000)) kB, $(grep -o '<tr' "$out/report.html" | wc -l) table rows"
/usr/bin/time -f '%e %U %S %M' -o "$out/time" python3 -c "
import json, sys
for p in sys.argv[1:]: json.load(open(p))" $(for ((r = 0; r < sample; r++)); do echo "$out/job/rank$r.pt.trace.json"; done)
read -r wall user sys rss_kb <"$out/time"
echo "python3 json.load, $sample of the files one after another: wall ${wall} s, peak RSS $((rss_kb / 1024)) MiB" \
  "(all $ranks at that rate: $(python3 -c "print(round($wall * $ranks / $sample, 1))") s)"
if [[ -n "${KEEP:-}" ]]; then cp "$out/text" "$out/report.html" "$KEEP"; fi  # a folder for the text and report
