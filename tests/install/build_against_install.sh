#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, builds examples/seed.cpp as a user would
# (find_package(ddpscope), only the installed headers), and runs it: the seed's Trainer,
# 3 ranks and 200 epochs (oversubscribed on fewer cores, which the launcher says).
# Usage: build_against_install.sh BUILD_DIR SOURCE_DIR [CXX_FLAGS]
#   CXX_FLAGS: the build's own (a sanitizer build's library needs its runtime in the user's link)
set -euo pipefail
build=$1
source=$2
flags=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# The public headers, and nothing of src/, are installed.
headers=$(cd "$work/prefix/include" && find . -type f | sort)
echo "$headers"
grep -q '^./ddpscope/trainer.h$' <<<"$headers" || { echo "FAIL: ddpscope/trainer.h is not installed" >&2; exit 1; }
if grep -v '^./ddpscope/' <<<"$headers"; then echo "FAIL: headers outside include/ddpscope/ were installed" >&2; exit 1; fi
cmake -S "$source/tests/install" -B "$work/user" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DSEED_SOURCE="$source/examples/seed.cpp" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$work/user" -j "$(nproc)" >/dev/null
cd "$work"
"$work/user/seed" | tee "$work/seed.out"
grep -q '^Training completed in [0-9.]* seconds$' "$work/seed.out" || { echo "FAIL: the seed did not report its time" >&2; exit 1; }
# Trainer::stats(), read through the installed headers only: 200 epochs of 5000 samples on 3
# ranks (1667 each: 7 batches of 256, accumulated by 3) are 600 optimizer steps.
grep -q '^200 epochs, 600 optimizer steps on 3 devices, [0-9]* samples/s, final val_loss [0-9.]*$' "$work/seed.out" ||
  { echo "FAIL: the seed did not report Trainer::stats()" >&2; exit 1; }
