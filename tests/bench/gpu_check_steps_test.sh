#!/usr/bin/env bash
# bench/gpu/check_steps.sh's rules, with real commands against a small budget: a step its limit
# stops is a failure, one the budget's end cuts is "cut by the budget" and one not started for
# lack of time "not run"; neither of those is a failure. Usage: gpu_check_steps_test.sh SOURCE_DIR
set -euo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
log=$work/check.log
steps=$work/steps.tsv
failures=0
: >"$steps"
source "$source_dir/bench/gpu/check_steps.sh"
status_of() { awk -F'\t' -v n="$1" '$1 == n { print $2 }' "$steps"; }

SECONDS=0
budget=100
run ok_step 10 true
outcome ok_step "ran"
[[ $(status_of ok_step) == ran ]] || fail "a step that exited 0 is not 'ran'"

run unavailable 10 sh -c 'echo "x.py: not run: no GPU here" >&2; exit 3'
outcome unavailable "needs a GPU"
[[ $(status_of unavailable) == "not run" ]] || fail "exit 3 is not 'not run'"
grep -q $'unavailable\tnot run\t\t\tx.py: not run: no GPU here' "$steps" || fail "'not run' does not say why"

run own_limit 1 sleep 30
outcome own_limit "its own limit"
[[ $(status_of own_limit) == "timed out" ]] || fail "a step its own limit stopped is not 'timed out'"
((failures == 1)) || fail "a step that timed out within the budget is no failure ($failures)"

budget=$((SECONDS + 6))  # 6 s left: a 60 s step gets what is left
run cut 60 sleep 30
outcome cut "the budget's end"
[[ $(status_of cut) == "cut by the budget" ]] || fail "a step the budget cut is '$(status_of cut)'"
run late 60 true
outcome late "no time left"
[[ $(status_of late) == "not run" ]] || fail "a step with no time left is '$(status_of late)'"
grep -q $'late\tnot run\t\t\tout of the check\'s time' "$steps" || fail "'not run' does not say it was the time"
((failures == 1)) || fail "the budget's cut or a step not started counted as failures ($failures)"
echo "check_steps.sh: ran, not run, timed out, cut by the budget, not started: as documented"
