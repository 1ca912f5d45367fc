#!/usr/bin/env bash
# The same commit's instruction counts from two fresh clones through asv, the way two CI
# jobs differ: clones at paths of different lengths, each with its own asv environment, asv
# machine names det-a and det-b, another working directory and environment for the second,
# a busy core beside it. Counts are taken, never reused (TORCHPULSE_COUNT_REUSE=no).
#
#     bash experiments/instructions/two_clones.sh DIR [REV]
#
# Prints every workload's two figures and the largest difference (docs/instructions.md,
# "Determinism").
set -eu
DIR=${1:?usage: two_clones.sh DIR [REV]}
REV=${2:-HEAD}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$DIR"
A="$DIR/a"
B="$DIR/clone-b-at-a-path-longer-by-thirty-characters/repo"
rm -rf "$A" "$B"
git clone -q "$HERE" "$A"
git clone -q "$HERE" "$B"
git -C "$A" checkout -q "$REV"
git -C "$B" checkout -q "$REV"
ASV="$HERE/.venv/bin/asv"
stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%T)" "$line"; done; }

run_a() {
    cd "$A"
    "$ASV" machine --yes --machine det-a >/dev/null
    TORCHPULSE_COUNT_REUSE=no "$ASV" run --machine det-a --bench bench_instructions \
        "HEAD^!" 2>&1 | stamp > "$DIR/a.log"
}
# the interpreter asv builds its environments from: the one .venv's is made from, first on
# PATH in both (a PATH of /usr/bin:/bin alone gave asv Debian's python3.11 for the second
# clone, another interpreter binary, whose counts were 3-12 % lower: another environment)
BASE_BIN=$(dirname "$(readlink -f "$HERE/.venv/bin/python")")
run_b() {
    mkdir -p "$DIR/elsewhere"
    cd "$DIR/elsewhere"
    # pip's settings are the machine's (PIP_FIND_LINKS names where this machine's CPU
    # build of torch lies: without it pip took torch 2.13.0's CUDA build from the index,
    # another torch, whose counts differed by up to 2.5 %)
    env -i HOME="$DIR/elsewhere" PATH="$BASE_BIN:/usr/bin:/bin" LANG=C.UTF-8 \
        $(env | grep '^PIP_' | tr '\n' ' ') TORCHPULSE_COUNT_REUSE=no \
        PADDING="$(head -c 3000 /dev/zero | tr '\0' x)" \
        bash -c "cd '$B' && '$ASV' machine --yes --machine det-b >/dev/null && \
                 '$ASV' run --machine det-b --bench bench_instructions 'HEAD^!'" 2>&1 \
        | stamp > "$DIR/b.log"
}
# a busy core beside the second clone, for as long as it counts
python3 -c "while True: pass" &
HOG=$!
trap 'kill $HOG 2>/dev/null || true' EXIT
start=$(date +%s)
run_a &
PA=$!
run_b
wait $PA
echo "both done in $(( $(date +%s) - start )) s"
BASE_A=$(readlink -f "$A/.asv/env"/*/bin/python)
BASE_B=$(readlink -f "$B/.asv/env"/*/bin/python)
"$HERE/.venv/bin/python" - "$A/results/det-a" "$B/results/det-b" "$BASE_A" "$BASE_B" <<'EOF'
import glob, json, sys
from pathlib import Path

def figures(folder):
    (path,) = [p for p in glob.glob(f"{folder}/*.json") if not p.endswith("machine.json")]
    data = json.load(open(path))
    torch = [p.name for p in Path(folder).parents[1].glob(".asv/env/*/lib/python*/site-packages/torch-*.dist-info")]
    print(f"{folder}: python {data['python']}, made from {sys.argv[3 if 'det-a' in folder else 4]}, {torch}")
    columns = data["result_columns"]
    counts = {}
    for name, result in data["results"].items():  # every family's class of counts
        if name.startswith("bench_instructions.") and name.endswith(".track_instructions"):
            row = dict(zip(columns, result))
            counts.update(zip([eval(p) for p in row["params"][0]], row["result"]))
    return counts, data["env_name"]

a, env_a = figures(sys.argv[1])
b, env_b = figures(sys.argv[2])
rows = sorted(((abs(b[n] - a[n]) / a[n] * 100, n, a[n], b[n]) for n in a
               if a[n] is not None and b.get(n) is not None), reverse=True)
print(f"environments: {env_a} / {env_b}")
print("| workload | det-a | det-b | difference |\n|---|---:|---:|---:|")
for diff, name, x, y in rows:
    print(f"| `{name}` | {x:,.0f} | {y:,.0f} | {diff:.3f} % |")
same = sum(1 for r in rows if r[2] == r[3])
print(f"\n{same} of {len(rows)} identical; largest {rows[0][0]:.3f} % ({rows[0][1]})")
EOF
