#!/usr/bin/env bash
# The GPU machine's one prepared check (bench/gpu/README.md): run there from the repository
# root with $OUT set and the bundle of bench/gpu/pack.sh carried. Every step has its own
# timeout inside one budget (DDPSCOPE_CHECK_BUDGET_S, default 360 s); a step that cannot run
# on this machine (no GPU, no CUDA build yet, no torch) is recorded as "not run" with why.
#
#   OUT=/some/folder bench/gpu/check.sh [BUNDLE_TAR]   # default build/gpu-bundle/ddpscope-bundle.tar.gz
#   DDPSCOPE_CHECK_SKIP="kernel_tests seeds" ...          # a rerun: skip what the first run measured
#
# Writes to $OUT: results.md, results.json, check.log, and where they ran summary-gpu-graph.json,
# traces.tar.gz, analyze.json, doctor.txt and doctor.json. Exit 0 when every step that could run passed; 1 when a step
# that should have worked failed or ran out of its time; 2 for usage (no $OUT, no bundle).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tarball=$(realpath -m "${1:-$root/build/gpu-bundle/ddpscope-bundle.tar.gz}")
[[ -n ${OUT:-} ]] || { echo "check.sh: set OUT to the folder for the results" >&2; exit 2; }
[[ -f $tarball ]] || { echo "check.sh: no bundle at $tarball; run bench/gpu/pack.sh here first" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)  # the steps run in a folder of their own
work=$(mktemp -d)
log=$OUT/check.log
steps=$work/steps.tsv
: >"$log"
: >"$steps"
budget=${DDPSCOPE_CHECK_BUDGET_S:-300}
failures=0

# report NOTE: results.md and results.json from the steps recorded so far. Also on the way
# out after a step that stopped the script, so the results of the steps before it come back.
reported=no
report() {
  reported=yes
  python3 "$root/bench/gpu/report.py" "$steps" "$OUT" "$1"
}
trap 'status=$?; cd /; [[ $reported == yes ]] || report "check.sh stopped early (exit $status): check.log says where."; rm -rf "$work"' EXIT

# The step helpers (run, record, outcome, wanted, first_file, json_field): check_steps.sh.
source "$root/bench/gpu/check_steps.sh"

# 1. Unpack the bundle; tell its wrappers where the machine's own CUDA libraries are
# (cuBLASLt and the like are too large to travel: torch's wheels and the toolkit have them).
tar -C "$work" -xzf "$tarball"
bundle=$work/ddpscope-bundle
cat "$bundle/MANIFEST" >>"$log"
machine_dirs=()
# Where the machine keeps CUDA's libraries: the toolkit beside nvcc, torch's nvidia wheels.
search_dirs=()
for dir in "$(dirname "$(command -v nvcc || echo /nonexistent/bin)")/../lib64" \
  $(python3 -c 'import nvidia; print(*nvidia.__path__)' 2>/dev/null || true); do
  [[ -d $dir ]] && search_dirs+=("$dir")
done
for lib in $(sed -n 's/^machine_libs: //p' "$bundle/MANIFEST"); do
  [[ $lib == libcuda.so* || $lib == libnvidia-* ]] && continue  # the driver's: the loader finds them
  found=$( (ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l {print $NF}'
    ((${#search_dirs[@]})) && find "${search_dirs[@]}" -name "$lib" 2>/dev/null) | sed -n 1p || true)
  if [[ -n $found ]]; then machine_dirs+=("$(dirname "$found")"); else echo "machine library $lib: not found" >>"$log"; fi
done
DDPSCOPE_BUNDLE_MACHINE_LIBS=$(IFS=:; echo "${machine_dirs[*]:-}")
export DDPSCOPE_BUNDLE_MACHINE_LIBS PYTHONUNBUFFERED=1
ddpscope=$bundle/bin/ddpscope

# 2. The machine: its GPU (nvidia-smi), glibc and Python; everything GPU is skipped without one.
gpu=no
echo "nvidia-smi is not on this machine" >"$work/gpus"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >"$work/gpus" 2>&1 && grep -q '^GPU ' "$work/gpus"; then gpu=yes; fi
{ uname -srm; getconf GNU_LIBC_VERSION 2>&1; python3 --version 2>&1; nvidia-smi 2>&1 || true; } >>"$log"
gpu_note=$(if [[ $gpu == yes ]]; then head -1 "$work/gpus"; else echo "no GPU: $(head -1 "$work/gpus")"; fi)
record machine ran "" "" "$gpu_note; $(getconf GNU_LIBC_VERSION 2>&1)"

# 3. The bundle runs here at all (its loader, its libraries).
run ddpscope_version 30 "$ddpscope" --version
outcome ddpscope_version "$(head -1 "$work/ddpscope_version.out")"
[[ $rc == 0 ]] || { report "The bundle does not run here."; exit 1; }
# Two ranks on the CPU through the bundle's Open MPI (the next issue's multi-GPU runs need it).
mkdir -p "$work/runs"
cd "$work/runs"
run ddpscope_cpu_2ranks 60 "$ddpscope" train --preset seed --max-epochs 2 --devices 2 --default-root-dir two_ranks
outcome ddpscope_cpu_2ranks "2 epochs on 2 CPU ranks, the bundle's mpirun"

# 4. Does this ddpscope have a GPU engine? Ask it (a future `devices --json` first, then one
# short epoch with --accelerator cuda); without one, say so with its own message.
run devices 30 "$ddpscope" devices --json
if [[ $rc == 0 ]]; then
  record devices ran "" "" "$(tr -d '\n' <"$work/devices.out" | cut -c 1-300)"
else
  record devices "not run" "" "" "this ddpscope has no devices command (exit $rc)"
fi
run accelerator_cuda 60 "$ddpscope" train --preset seed --accelerator cuda --devices 1 --max-epochs 1 \
  --default-root-dir probe
message=$(grep -m1 'ddpscope: error' "$work/accelerator_cuda.out" || tail -1 "$work/accelerator_cuda.out")
engine=no
if [[ $rc == 0 ]]; then
  engine=yes
  record accelerator_cuda ran "$wall" "" "--accelerator cuda accepted"
elif [[ $gpu == yes ]] && grep -q '^cuda_build: yes' "$bundle/MANIFEST"; then
  record accelerator_cuda failed "$wall" "" "a CUDA build on a GPU machine refused: $message"
else
  record accelerator_cuda "not run" "" "" "no GPU, or a build without CUDA (message: $message)"
fi

gpu_tests=$(sed -n 's/^gpu_tests: //p' "$bundle/MANIFEST")

# The steps below run in the order the goals need them, so that what the lease's few minutes
# cut is what matters least: the seed's timings on one GPU, the NVML probe, the Python anchors
# they are compared with, Lightning's traces for `ddpscope analyze`, a short memcheck; then the
# GPU test suites, the multi-rank seeds and the doctor in the time left.

# 5. The seed (200 epochs) on the GPU: CUDA graph, eager, TF32 and bf16-mixed. Per step =
# summary.json's wall over its optimizer steps. DEVICES=N seed_gpu ...: N ranks (1 unless given).
seed_gpu() {
  local name=$1 summary
  shift
  run "$name" 45 "$ddpscope" train --preset seed --accelerator cuda --devices "${DEVICES:-1}" --default-root-dir "$name" "$@"
  summary=$(first_file "$name" summary.json)
  if [[ $rc == 0 && -n $summary ]]; then
    wall=$(python3 -c "import json; print(json.load(open('$summary'))['wall_seconds'])")
    outcome "$name" "$(grep -m1 'Training completed' "$work/$name.out")" \
      "$(python3 -c "import json; d = json.load(open('$summary')); print(1e6 * d['wall_seconds'] / d['optimizer_steps'])")"
  else
    outcome "$name" ""
  fi
}
if [[ $engine == yes ]] && wanted seeds; then
  seed_gpu ddpscope_gpu_graph
  summary=$(first_file ddpscope_gpu_graph summary.json)
  [[ -z $summary ]] || cp "$summary" "$OUT/summary-gpu-graph.json"
  seed_gpu ddpscope_gpu_eager --no-cuda-graph
  seed_gpu ddpscope_gpu_tf32 --precision tf32
  seed_gpu ddpscope_gpu_bf16 --precision bf16-mixed
elif [[ $engine != yes ]]; then
  record ddpscope_gpu_graph "not run" "" "" "--accelerator cuda did not run (the seed runs need it)"
fi

# 6. The seed's per-step NVML probe: 20 epochs (400 init/read/shutdown cycles, enough for a
# time per step; 200 epochs would be 4000), graph and eager; then one cycle alone, 200 calls,
# in ddpscope's NVML code and in pynvml.
if wanted nvml; then
  if [[ $engine == yes ]]; then
    seed_gpu ddpscope_gpu_graph_probe --monitor-mode per-step --max-epochs 20
    seed_gpu ddpscope_gpu_eager_probe --no-cuda-graph --monitor-mode per-step --max-epochs 20
  fi
  if [[ -x $bundle/bin/nvml_cycle_bench ]]; then
    run nvml_cycle_ddpscope 20 "$bundle/bin/nvml_cycle_bench" 200
    outcome nvml_cycle_ddpscope "ddpscope's NvmlSession, 200 calls" \
      "$([[ $rc == 0 ]] && json_field "$work/nvml_cycle_ddpscope.out" cycle_us_median)"
  fi
  run nvml_cycle_pynvml 20 python3 "$root/bench/gpu/nvml_cycle.py" --calls 200
  outcome nvml_cycle_pynvml "pynvml, 200 calls" \
    "$([[ $rc == 0 ]] && json_field "$work/nvml_cycle_pynvml.out" cycle_us_median)"
fi

# 7. The anchors on the same GPU: a plain eager PyTorch loop (without and with the probe),
# then the seed's own Lightning script (with its probe, then without). Each script stops
# itself 30 s before its limit (after the epoch that passes it), so that a slow one still
# gives a time per step; the note says how many of the 200 epochs ran.
python_step() {
  local name=$1 note=$2 limit=$3 left=$((budget - SECONDS)) per_step=
  shift 3
  ((limit > left)) && limit=$left
  run "$name" "$limit" "$@" --max-seconds $((limit > 40 ? limit - 30 : 10))
  if [[ $rc == 0 ]]; then
    per_step=$(json_field "$work/$name.out" per_step_us)
    wall=$(json_field "$work/$name.out" wall_s)
    note="$note; $(json_field "$work/$name.out" epochs) of 200 epochs"
  fi
  outcome "$name" "$note" "$per_step"
}
if wanted python; then
  python_step eager_torch "synchronize at the end only" 40 python3 "$root/bench/gpu/eager_torch.py"
  python_step eager_torch_probe "the seed's probe per micro-batch" 45 python3 "$root/bench/gpu/eager_torch.py" --probe
  python_step lightning_seed_probe "the seed's script, 1 GPU (its 3-GPU DDP needs 3 GPUs)" 60 \
    python3 "$root/bench/gpu/seed_lightning.py"
  python_step lightning_seed_no_probe "the seed's script without the probe" 45 \
    python3 "$root/bench/gpu/seed_lightning.py" --no-probe
fi

# 8. The seed's Lightning script writes its own traces on the GPU (PyTorchProfiler, one epoch),
# and `ddpscope analyze` reads them: analyze.json comes back.
if wanted analyze; then
  run lightning_traces 45 python3 "$root/bench/gpu/seed_lightning.py" --max-epochs 1 --trace-dir "$work/runs/traces"
  outcome lightning_traces "the seed's script with PyTorchProfiler, 1 epoch"
  if [[ $rc == 0 ]]; then
    # The traces themselves come back too: a current torch's Kineto traces of a real GPU job,
    # for analyze's tests (kept when they fit the device tool's 16 MiB per file).
    if tar -C "$work/runs" -czf "$work/traces.tar.gz" traces 2>>"$log" &&
      (($(stat -c %s "$work/traces.tar.gz") < 16000000)); then cp "$work/traces.tar.gz" "$OUT/"; fi
    run analyze 30 "$ddpscope" analyze --json "$work/runs/traces"
    outcome analyze "ddpscope analyze of the seed's own GPU traces"
    [[ $rc == 0 ]] && cp "$work/analyze.out" "$OUT/analyze.json"
  fi
fi

# 8b. The user's own script through `ddpscope doctor -- COMMAND`: the seed's Lightning script as
# written (its pynvml probe included) on one GPU, its Trainer's devices set by the start-up hook,
# cut at 60 optimizer steps, traced and answered; the answer is in check.log.
if wanted script; then
  if [[ $gpu != yes ]]; then
    record doctor_script "not run" "" "" "no GPU: the seed's script trains on one"
  elif ! python3 -c 'import torch, pytorch_lightning, pynvml' 2>>"$log"; then
    record doctor_script "not run" "" "" "this Python lacks torch, pytorch_lightning or pynvml"
  else
    run doctor_script 90 "$ddpscope" doctor --devices 1 --max-steps 60 --default-root-dir script -- \
      python3 "$root/bench/gpu/seed_lightning.py"
    outcome doctor_script "ddpscope doctor -- python3 seed_lightning.py (the seed's script, 1 GPU, 60 optimizer steps)"
  fi
fi

# 9. compute-sanitizer's memcheck on the device step (graphs, cursor, every kernel): one
# test of it, as memcheck runs many times slower.
if [[ -n $gpu_tests && $gpu == yes ]] && wanted memcheck; then
  sanitizer=$(command -v compute-sanitizer || echo "$(dirname "$(command -v nvcc || echo /nonexistent/nvcc)")/compute-sanitizer")
  first=${gpu_tests%% *}
  [[ " $gpu_tests " == *" gpu_train_step_gpu_test "* ]] && first=gpu_train_step_gpu_test
  if [[ -x $sanitizer ]]; then
    run compute_sanitizer 60 "$sanitizer" --tool memcheck --target-processes all --error-exitcode 9 \
      "$bundle/bin/$first" --gtest_filter='*Graph*:*graph*'
    # A sanitizer that refuses the device (as on gVisor machines) is not run, in its own words.
    if [[ $rc != 0 ]] && grep -qiE 'not supported|unsupported|failed to initialize|Device not supported' \
      "$work/compute_sanitizer.out"; then
      record compute_sanitizer "not run" "" "" "$(grep -m1 -iE 'not supported|unsupported|failed to initialize' "$work/compute_sanitizer.out")"
    else
      outcome compute_sanitizer "memcheck on $first (its graph tests)"
    fi
  else
    record compute_sanitizer "not run" "" "" "compute-sanitizer is not on this machine"
  fi
fi

# 10. In the time left: the GPU test suites (kernels and the device step, then the Trainer's
# and the doctor's, which start tens of processes each loading CUDA), the step benchmark, the
# NCCL world of one and the seed's 3 and 2 ranks sharing the GPU, the doctor, the CPU seed.
slow_tests=" gpu_trainer_gpu_test gpu_doctor_gpu_test "
# gpu_test_pass yes|no: runs the bundle's GPU tests that are slow (yes) or the others (no).
gpu_test_pass() {
  local test slow
  for test in $gpu_tests; do
    slow=no
    if [[ $slow_tests == *" $test "* ]]; then slow=yes; fi
    [[ $slow == "$1" ]] || continue
    run "$test" "$([[ $slow == yes ]] && echo 120 || echo 60)" "$bundle/bin/$test"
    outcome "$test" "GPU test"
  done
}
if [[ -z $gpu_tests ]]; then
  record gpu_tests "not run" "" "" "the build has no GPU tests yet (tests/gpu)"
elif [[ $gpu == no ]]; then
  record gpu_tests "not run" "" "" "no GPU: $gpu_tests"
elif wanted kernel_tests; then
  gpu_test_pass no
fi
if [[ -x $bundle/bin/gpu_step_bench ]] && wanted step; then
  run gpu_step_bench 60 "$bundle/bin/gpu_step_bench" 200
  outcome gpu_step_bench "the seed's step as one CUDA graph (per step); eager and TF32 in check.log" \
    "$([[ $rc == 0 ]] && json_field "$work/gpu_step_bench.out" graph_step_us)"
fi
if [[ $engine == yes ]] && wanted ranks; then
  NCCL_DEBUG=WARN seed_gpu ddpscope_gpu_nccl1 --process-group-backend nccl  # NCCL's own words if it fails
  DEVICES=2 seed_gpu ddpscope_gpu_2ranks
  DEVICES=3 seed_gpu ddpscope_gpu_3ranks
fi
if [[ -n $gpu_tests && $gpu == yes ]] && wanted trainer_tests; then gpu_test_pass yes; fi
if [[ $engine == yes ]] && wanted doctor; then
  run doctor_cuda 120 "$ddpscope" doctor --preset seed --accelerator cuda --default-root-dir doctor
  outcome doctor_cuda "ddpscope doctor --preset seed --accelerator cuda (the seed with its per-step probe, one GPU)"
  [[ ! -f $work/doctor_cuda.out ]] || cp "$work/doctor_cuda.out" "$OUT/doctor.txt"
  doctor_json=$(first_file doctor doctor.json)
  [[ -z $doctor_json ]] || cp "$doctor_json" "$OUT/doctor.json"
elif [[ $engine != yes ]]; then
  record doctor_cuda "not run" "" "" "--accelerator cuda did not run"
fi
if [[ $engine == yes ]] && wanted cpu; then
  run ddpscope_cpu_seed 60 "$ddpscope" train --preset seed --devices 1 --default-root-dir ddpscope_cpu_seed
  outcome ddpscope_cpu_seed "$(grep -m1 'Training completed' "$work/ddpscope_cpu_seed.out")"
fi

cd "$root"
report "GPU: $gpu_note. ddpscope GPU engine: $engine. $failures step(s) failed. $(sed -n 's/^commit: /commit /p' "$bundle/MANIFEST")."
cat "$OUT/results.md"
((failures == 0))
