#!/usr/bin/env bash
# A history of commits that change nothing the counted workloads run, and one that adds
# about 1 % to a model, counted through asv as a user's dashboard would (issue 49 item 4;
# figures in docs/instructions.md, "Threshold").
#
#     bash experiments/instructions/null_history.sh /tmp/nullhist [NULL_BEFORE] [NULL_AFTER]
#
# Makes a clone of this repository under DIR, commits NULL_BEFORE (20) changes of the kinds
# a project's history is made of (docs, tests, comments, a new helper in a module the counted
# process imports, a docstring), then the planted commit (autograd/ppl_robust_reg's mean
# computed through two extra copies: +1.02 % instructions on its vjp), then NULL_AFTER (4)
# more null changes, and runs `asv run --bench bench_instructions` over all of them as the
# asv machine "nullhist". Judge the result with
#     torchpulse alert --config DIR/repo/asv.conf.json --count-threshold 0.01
set -eu
DIR=${1:?usage: null_history.sh DIR [NULL_BEFORE] [NULL_AFTER]}
BEFORE=${2:-20}
AFTER=${3:-4}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$DIR"
rm -rf "$DIR/repo"
git clone -q "$HERE" "$DIR/repo"
cd "$DIR/repo"
BASE=$(git rev-parse HEAD)
git config user.name nullhist
git config user.email nullhist@localhost

# the kinds of change, in turn: each touches a file the counted process does or does not load
null_change() {
    local i=$1
    case $((i % 10)) in
        1) printf '\nNull change %s: a sentence of documentation.\n' "$i" >> experiments/diary/detection.md ;;
        2) printf '\n# null change %s: a comment at the end of a module the worker imports\n' \
               "$i" >> src/torchpulse/fastrnns/runners.py ;;
        3) printf '\n\ndef test_null_change_%s():\n    assert %s + 1 == %s\n' "$i" "$i" \
               "$((i + 1))" >> tests/test_layout.py ;;
        4) printf '\n\ndef _null_helper_%s(value: int) -> int:\n    """A helper added by null change %s."""\n    return value + %s\n' \
               "$i" "$i" "$i" >> src/torchpulse/workloads.py ;;
        5) printf '\n# null change %s\n' "$i" >> src/torchpulse/analysis/detector/changes.py ;;
        6) sed -i "0,/^\"\"\"/s//\"\"\"Null change $i. /" src/torchpulse/autograd/ppl.py ;;
        7) printf '\nNull change %s.\n' "$i" >> README.md ;;
        8) printf '\n\ndef _null_helper_%s() -> str:\n    return "null change %s"\n' "$i" "$i" \
               >> src/torchpulse/timing.py ;;
        9) printf '\n# null change %s\n' "$i" >> src/torchpulse/cli/args.py ;;
        0) printf '\n# null change %s\n' "$i" >> src/torchpulse/autograd/models.py ;;
    esac
    git commit -qam "null change $i"
}

for i in $(seq 1 "$BEFORE"); do null_change "$i"; done
python3 - <<'PY'
path = "src/torchpulse/autograd/ppl.py"
text = open(path).read()
old = "        mu = x.mm(beta_v)\n"
assert text.count(old) == 1, "the planted line is not where it was"
open(path, "w").write(text.replace(old, "        mu = x.mm(beta_v).clone().clone()\n"))
PY
git commit -qam "planted: ppl_robust_reg's mean through two extra copies (+1 % on its vjp)"
PLANTED=$(git rev-parse HEAD)
for i in $(seq $((BEFORE + 1)) $((BEFORE + AFTER))); do null_change "$i"; done
echo "base $BASE, planted $PLANTED, head $(git rev-parse HEAD)"
git log --oneline "$BASE..HEAD" > "$DIR/commits.txt"

ASV="$HERE/.venv/bin/asv"
"$ASV" machine --yes --machine nullhist > /dev/null
# every commit counted: what this measures is the spread between counts, and a reused count
# would repeat its commit's figure (docs/instructions.md, "Reuse")
export TORCHPULSE_COUNT_REUSE=no
start=$SECONDS
"$ASV" run --machine nullhist --bench bench_instructions --show-stderr "$BASE..HEAD" \
    2>&1 | grep -v '^USDT:'
echo "asv run: $((SECONDS - start)) s for $((BEFORE + 1 + AFTER)) commits"
