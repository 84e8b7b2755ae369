#!/usr/bin/env bash
# The GPU machine's bundle (bench/gpu/pack.sh) is self-contained: packed from BUILD_DIR,
# unpacked into a temporary folder and run in a mount namespace where the Debian libraries
# and Open MPI files it packs are hidden (gpu_bundle_hidden.sh), it trains the seed on 1
# and 2 ranks (launched by ddpscope and by the bundle's mpirun), and every program and
# plugin in it resolves its libraries inside the bundle. Root (mount namespaces).
# Usage: gpu_bundle_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$source/bench/gpu/pack.sh" "$build" "$work/pack"
tar -C "$work" -xzf "$work/pack/ddpscope-bundle.tar.gz"
bundle=$work/ddpscope-bundle
mkdir "$work/run"
unshare -m sh "$source/tests/bench/gpu_bundle_hidden.sh" "$bundle" "$work/run"

# Each run exited 0 and did what it was asked, with nothing of the host's libraries.
for name in version train1 train2 mpirun2; do
  echo "--- $name"; cat "$work/run/$name.out"
  [[ $(cat "$work/run/$name.rc") == 0 ]] || fail "$name exited $(cat "$work/run/$name.rc") with the host's libraries hidden"
done
grep -q '^ddpscope [0-9]' "$work/run/version.out" || fail "ddpscope --version printed no version"
for name in train1 train2 mpirun2; do
  grep -q '^Training completed in [0-9.]* seconds$' "$work/run/$name.out" || fail "$name did not finish training"
done
# The libraries resolved: none missing, none from outside the bundle (the vDSO aside) but
# the machine's own CUDA libraries, which pack.sh leaves out and MANIFEST names (cuBLASLt).
grep -q '^== ' "$work/run/resolve.out" || fail "no program was checked"
if grep -E 'not found|FAILED' "$work/run/resolve.out"; then fail "the bundle misses a library (above)"; fi
outside=$(grep -E '=> /' "$work/run/resolve.out" | grep -v "=> $bundle/lib/" || true)
for lib in $(sed -n 's/^machine_libs: //p' "$bundle/MANIFEST"); do
  outside=$(grep -vF "$lib => " <<<"$outside" || true)
done
if [[ -n $outside ]]; then
  echo "$outside"
  fail "a library above resolved outside the bundle"
fi
echo "the bundle ran with the host's libraries hidden"

# bench/gpu/check.sh on this machine (no GPU): exit 0, results saying what was not run and
# why, the bundle's ddpscope answering, at most 8 files back, named as the device tool allows.
DDPSCOPE_CHECK_SKIP=nvml OUT=$work/out "$source/bench/gpu/check.sh" "$work/pack/ddpscope-bundle.tar.gz" ||
  fail "check.sh exited $? without a GPU"
grep -q '^| nvml | not run | *| *| skipped: DDPSCOPE_CHECK_SKIP' "$work/out/results.md" ||
  fail "check.sh did not skip the group DDPSCOPE_CHECK_SKIP named"
grep -q '^| ddpscope_version | ran |' "$work/out/results.md" || fail "check.sh did not run the bundle's ddpscope"
grep -Eq '^\| accelerator_cuda \| (ran \|.*accepted|not run \|.*message: )' "$work/out/results.md" ||
  fail "check.sh did not record --accelerator cuda's answer"
if ! nvidia-smi -L >/dev/null 2>&1; then
  grep -q '^| machine | ran |  |  | no GPU' "$work/out/results.md" || fail "check.sh did not say there is no GPU"
fi
python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$work/out/results.json" || fail "results.json is not JSON"
files=$(find "$work/out" -type f | wc -l)
((files <= 8)) || fail "check.sh wrote $files files; the device tool returns at most 8"
if find "$work/out" -mindepth 1 | sed "s|^$work/out/||" | grep -E '[^A-Za-z0-9._/-]|^([^/]+/){3}'; then
  fail "check.sh wrote names the device tool does not return (above)"
fi
echo "check.sh ran here and said what it could not run"

# With a GPU that nvidia-smi names and nothing else can reach (a fake nvidia-smi), every GPU
# step is tried, in the order the goals need them: the seed's timings, the NVML probe, the
# Python anchors, Lightning's traces for analyze, the user's script through the doctor, memcheck,
# then the test suites and the doctor.
mkdir "$work/fakebin"
cat >"$work/fakebin/nvidia-smi" <<'SMI'
#!/bin/sh
if [ "$1" = -L ]; then echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)"; else echo "a fake nvidia-smi"; fi
SMI
chmod +x "$work/fakebin/nvidia-smi"
PATH=$work/fakebin:$PATH OUT=$work/out-fake "$source/bench/gpu/check.sh" "$work/pack/ddpscope-bundle.tar.gz" >/dev/null || true
order=(machine ddpscope_version accelerator_cuda ddpscope_gpu_graph nvml_cycle_pynvml eager_torch lightning_seed_no_probe
  lightning_traces doctor_script)
[[ -n $(sed -n 's/^gpu_tests: //p' "$bundle/MANIFEST") ]] && order+=(compute_sanitizer)
order+=(doctor_cuda)
previous=0
for name in "${order[@]}"; do
  line=$(grep -n "^| $name |" "$work/out-fake/results.md" | head -1 | cut -d: -f1)
  [[ -n $line ]] || fail "check.sh with a GPU named recorded no step $name"
  ((line > previous)) || fail "check.sh ran $name out of the documented order"
  previous=$line
done
grep -q '^| nvml_cycle_pynvml | not run |' "$work/out-fake/results.md" || fail "pynvml's absence is not 'not run'"
echo "check.sh with a GPU named ran its steps in order"

# A check that stops partway (here: a bundle without its MANIFEST) still brings back the
# results of the steps before it, saying that it stopped.
mkdir -p "$work/broken/ddpscope-bundle"
tar -C "$work/broken" -czf "$work/broken.tar.gz" ddpscope-bundle
status=0
OUT=$work/out-broken "$source/bench/gpu/check.sh" "$work/broken.tar.gz" >/dev/null 2>&1 || status=$?
((status != 0)) || fail "check.sh passed with a broken bundle"
grep -q 'check.sh stopped early' "$work/out-broken/results.md" || fail "a stopped check.sh brought back no results.md"
echo "check.sh stopped early and still wrote its results"

# The Python scripts parse, answer --help without torch, and refuse a bad value with exit 2.
for script in "$source"/bench/gpu/*.py; do
  python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$script" || fail "$script does not parse"
  [[ $script == */report.py ]] && continue
  python3 "$script" --help >/dev/null || fail "$script --help exited $?"
  bad=--max-epochs=0
  [[ $script == */nvml_cycle.py ]] && bad=--calls=0
  status=0
  python3 "$script" "$bad" >/dev/null 2>&1 || status=$?
  ((status == 2)) || fail "$script took a bad value (exit $status, not 2)"
done
