# check.sh's step helpers, sourced by it (and by tests/bench/gpu_check_steps_test.sh). They
# use check.sh's variables: $budget (seconds for the whole check, counted by $SECONDS), $work
# (the steps' outputs), $log (check.log), $steps (the records) and $failures.

# first_file DIR NAME: the first file called NAME under DIR, or nothing (DIR need not exist).
first_file() { find "$1" -name "$2" 2>/dev/null | sed -n 1p || true; }

# wanted GROUP: whether DDPSCOPE_CHECK_SKIP leaves this group of steps to run (else it is
# recorded as skipped). Groups, in the order they run: seeds nvml python analyze memcheck
# kernel_tests step ranks trainer_tests doctor cpu. A rerun after a first run that ran out of
# time skips what that one measured.
wanted() {
  if [[ " ${DDPSCOPE_CHECK_SKIP:-} " == *" $1 "* ]]; then
    record "$1" "not run" "" "" "skipped: DDPSCOPE_CHECK_SKIP"
    return 1
  fi
}

# run NAME LIMIT_S COMMAND...: COMMAND's output in $work/NAME.out and check.log, its exit
# code in $rc (124 when it ran out of time), its seconds in $wall. The limit shrinks to the
# budget left ($clamped=yes: then running out of time is the budget's, not the step's fault);
# with under 5 s left the step is not started ($rc = skipped).
run() {
  local name=$1 limit=$2 left=$((budget - SECONDS)) start
  shift 2
  clamped=no
  if ((left < 5)); then rc=skipped wall=; echo "=== $name: not started, out of the check's time" >>"$log"; return; fi
  if ((limit > left)); then limit=$left clamped=yes; fi
  echo "=== $name (limit ${limit} s): $*" >>"$log"
  start=$(date +%s.%N)
  set +e
  timeout --kill-after=5 "$limit" "$@" >"$work/$name.out" 2>&1
  rc=$?
  set -e
  wall=$(awk -v start="$start" -v end="$(date +%s.%N)" 'BEGIN { printf "%.3f", end - start }')
  head -c 200000 "$work/$name.out" >>"$log"
  echo "=== $name: exit $rc after $wall s" >>"$log"
}

# record NAME STATUS WALL PER_STEP_US NOTE: one row of the results; "failed" and "timed
# out" count as failures.
record() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$steps"
  [[ $2 == failed || $2 == "timed out" ]] && failures=$((failures + 1))
  echo "--- $1: $2 $5"
}

# outcome NAME NOTE [PER_STEP_US]: records the last run by its exit code: 0 ran, 3 not run
# (the program said why: this machine lacks what it needs), 124 timed out (or "cut by the
# budget" when its limit was the budget's rest: no failure), else failed.
outcome() {
  local why
  why=$(grep -m1 -E 'not run|unavailable' "$work/$1.out" 2>/dev/null || true)
  case $rc in
    0) record "$1" ran "$wall" "${3:-}" "$2" ;;
    3) record "$1" "not run" "" "" "$why" ;;
    124 | 137) if [[ $clamped == yes ]]; then record "$1" "cut by the budget" "$wall" "" "$2"; else record "$1" "timed out" "$wall" "" "$2"; fi ;;
    skipped) record "$1" "not run" "" "" "out of the check's time" ;;
    132) record "$1" failed "$wall" "" "illegal instruction: pack a build for this CPU (not -march=native elsewhere)" ;;
    *) record "$1" failed "$wall" "" "exit $rc: $(tail -1 "$work/$1.out")" ;;
  esac
}

# json_field FILE FIELD: a field of the JSON line a program printed last.
json_field() { grep '^{' "$1" | tail -1 | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"; }

