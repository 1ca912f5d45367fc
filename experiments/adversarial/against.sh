#!/usr/bin/env bash
# Run this checkout's tests against the sources of another commit: which of the adversarial
# cases each test stands for failed there and pass here. Usage, from the repository root:
#   bash experiments/adversarial/against.sh c91c185 [experiments/adversarial/issue88_tests.txt]
# Prints PASSED/FAILED per test, first against COMMIT's src/, then against this checkout's.
# A case whose test passes against COMMIT is not proven by that test.
set -euo pipefail
commit=${1:?usage: against.sh COMMIT [TESTS-FILE]}
list=${2:-experiments/adversarial/issue88_tests.txt}
old=$(mktemp -d /tmp/torchpulse-against-XXXXXXXX)
trap 'git worktree remove --force "$old" >/dev/null 2>&1 || rm -rf "$old"' EXIT
git worktree add -q --detach "$old" "$commit"
mapfile -t tests < <(grep -v '^#' "$list" | grep -v '^$')
run() {  # a per-test timeout: the old sources hang on a FIFO or a stderr nobody reads
  .venv/bin/python -m pytest -n 2 -p no:cacheprovider -q -rA --timeout=90 "${tests[@]}" 2>&1 |
    grep -E '^(PASSED|FAILED|ERROR) ' | sed 's/ - .*//' | sort || true
}
echo "== against $commit"
PYTHONPATH="$old/src" run
echo "== against this checkout ($(git rev-parse --short HEAD))"
run
