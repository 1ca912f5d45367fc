#!/usr/bin/env bash
# The GPU suite on the GPU machine (issue 50; figures in docs/gpu.md). Sent with the device
# tool from the repository root, asv's wheels carried in .whl/:
#     run(command="STEPS='setup gpu_tests cost asv_full' bash experiments/gpu/suite.sh",
#         carry=[".whl"], timeout_s=590)
# Steps, each alone on the GPU under its own time cap:
#   setup      asv from the wheels, torchpulse over the machine's own (CUDA) torch
#   gpu_tests  pytest -m gpu tests/gpu
#   cost       experiments/gpu/process_cost.py: where a per-process benchmark's time went
#   asv_full   one commit of every suite that measures on CUDA, through asv, timed
#   repeat     $REPEATS fresh processes of the GPU suite's measurement ($WORKLOADS patterns)
#   planted    one more process with experiments/gpu/plant.py's change in place
#   envs       compare --python PY --python PY --gpu over $WORKLOADS: the same environment
#              twice, so every verdict should be equivalent and every kernel count the same
#   full       one process measuring every workload (what bench_gpu costs a commit)
#   pinning    $REPEATS pairs of processes of the GPU suite's measurement ($WORKLOADS), one
#              kept on CPUs $PIN, the other free, taking turns: does the host CPU a process
#              lands on move its wall time between processes?
#   cheap      one process of the default selection with $CHEAP (measure_once.py --set
#              NAME=VALUE ...), a line a workload in rows.jsonl with its phases
#   trial      the wall-time bursts trial (bursts-trial.patch: 3b487ff, reverted) in a copy:
#              two processes of the same selection, then pair.py (docs/gpu.md, run 15)
#   pair       two processes of bench_gpu's default selection, as a user's CI differs: the
#              first from this checkout; the second from a copy at a longer path, started in
#              another directory with another environment and asv machine name, $HOGS CPU
#              hogs beside it. A line a workload in rows.jsonl as measured; pair.py compares
# What comes back in $OUT: summary.txt (a line a step: exit code, seconds), all.log (every
# step's output as it came), measurements.jsonl (a line a measurement, for history.py) and
# files.tgz (asv's results and each step's log).
# Dry run on a CPU machine, from a copy of the tree (asv_full writes results/ there):
#   DEVICE=cpu PRESET=smoke TORCHPULSE_GPU_SUITE=cpu WORKLOADS='rnns/cudnn/*' REPEATS=2 \
#       TORCHPULSE_GPU_WORKLOADS='rnns/cudnn/*' ASV_BENCH='^(_canary|bench_gpu)\.' \
#       NO_INSTALL=1 PY=.venv/bin/python STEPS='cost asv_full repeat planted' \
#       bash experiments/gpu/suite.sh
set -u
OUT=${OUT:-/tmp/gpu-suite}
DEVICE=${DEVICE:-cuda}
PRESET=${PRESET:-cuda}
PY=${PY:-python3}
STEPS=${STEPS:-"setup gpu_tests cost asv_full"}
REPEATS=${REPEATS:-5}
WORKLOADS=${WORKLOADS:-}
WORK=$(mktemp -d)
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
LOG=$OUT/all.log
export PYTHONUNBUFFERED=1

step() {  # step NAME CAP COMMAND...: run it under a time cap if STEPS names it, one line
    local name=$1 cap=$2 t0=$SECONDS rc
    shift 2
    if [[ " $STEPS " != *" $name "* ]]; then return; fi
    # into all.log as it comes: a call cut short still brings back what ran
    printf '\n===== %s (cap %ss): %s\n' "$name" "$cap" "$*" >> "$LOG"
    timeout -k 5 "$cap" "$@" 2>&1 | grep --line-buffered -v '^USDT:' | tee "$WORK/$name.log" \
        >> "$LOG"
    rc=${PIPESTATUS[0]}
    printf '%-12s rc=%-4s %4ss\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$SUMMARY" \
        >> "$LOG"
}

setup() {
    if [ -d .whl ]; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site .whl/*.whl || return 1
    fi
    if [ -z "${NO_INSTALL:-}" ]; then
        "$PY" -m pip install -q --no-deps --no-build-isolation -e . || return 1
    fi
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
        --format=csv 2>&1
    "$PY" -c 'import torch, sys; print(sys.version); print(torch.__version__, torch.version.cuda,
torch.backends.cudnn.version(), torch.cuda.is_available() and torch.cuda.get_device_name())'
}

asv_full() {  # one commit of every suite that measures on this device, through asv
    if [ ! -d .git ]; then
        git init -q -b main && git add -A &&
            git -c user.name=gpu -c user.email=gpu@localhost commit -qm "the tree sent" ||
            return 1
    fi
    local bench start
    bench=${ASV_BENCH:-$("$PY" -c 'from torchpulse.results.external import measured_on
import sys; print(measured_on(sys.argv[1]))' "$DEVICE")}
    export HOME=$WORK/home  # asv's machine file
    mkdir -p "$HOME"
    "$PY" -m asv machine --yes --machine gpu > /dev/null || return 1
    start=$SECONDS
    TORCHPULSE_DEVICE=$DEVICE TORCHPULSE_PRESET=$PRESET "$PY" -m asv run --machine gpu \
        -E "existing:$(command -v "$PY")" --set-commit-hash "$(git rev-parse HEAD)" \
        --record-samples --show-stderr --bench "$bench"
    local rc=$?
    echo "asv run: ${bench} took $((SECONDS - start)) s, exit $rc"
    "$PY" - <<'EOF'
import glob, json
from collections import defaultdict
[path] = [p for p in glob.glob("results/gpu/*.json") if not p.endswith("machine.json")]
r = json.load(open(path))
cols = r["result_columns"]
per = defaultdict(float)
count = defaultdict(int)
for name, row in r["results"].items():
    row = dict(zip(cols, row))
    module = name.split(".")[0]
    per[module] += row.get("duration") or 0.0
    count[module] += 1
print("setup_cache seconds:", {k: round(v, 1) for k, v in r.get("durations", {}).items()})
print("benchmark seconds by module:", {k: round(v, 1) for k, v in per.items()})
print("benchmarks by module:", dict(count))
EOF
    "$PY" -m torchpulse.cli alert --config asv.conf.json --format json \
        --output "$WORK/alert-full.json" > /dev/null
    cp -r results "$WORK/asv-results"
    return $rc
}

# every measurement a line of $OUT/measurements.jsonl, labelled, as soon as it is taken
repeat() {
    for i in $(seq 1 "$REPEATS"); do
        "$PY" experiments/gpu/measure_once.py "$OUT/measurements.jsonl" --label "same$i" \
            --device "$DEVICE" --preset "$PRESET" --workloads "$WORKLOADS" || return 1
    done
}

planted() {
    "$PY" experiments/gpu/plant.py || return 1
    "$PY" experiments/gpu/measure_once.py "$OUT/measurements.jsonl" --label planted \
        --device "$DEVICE" --preset "$PRESET" --workloads "$WORKLOADS"
    local rc=$?
    "$PY" experiments/gpu/plant.py --undo
    return $rc
}

envs() {
    "$PY" -m torchpulse.cli compare --python "$(command -v "$PY")" \
        --python "$(command -v "$PY")" --gpu --no-instructions --max-runs 3 \
        --workloads "${WORKLOADS:-rnns/cudnn/*,rnns/py/*}" --format json \
        --output "$OUT/envs.json"
}

pinning() {
    local i
    for i in $(seq 1 "$REPEATS"); do
        "$PY" experiments/gpu/measure_once.py "$OUT/measurements.jsonl" --label "pinned$i" \
            --device "$DEVICE" --preset "$PRESET" --workloads "$WORKLOADS" \
            --pin "${PIN:-4,5}" || return 1
        "$PY" experiments/gpu/measure_once.py "$OUT/measurements.jsonl" --label "free$i" \
            --device "$DEVICE" --preset "$PRESET" --workloads "$WORKLOADS" || return 1
    done
}

cheap() {
    local sets=() s
    for s in ${CHEAP:-}; do sets+=(--set "$s"); done
    "$PY" experiments/gpu/measure_once.py "$OUT/measurements.jsonl" --label cheap \
        --device "$DEVICE" --preset "$PRESET" --rows "$OUT/rows.jsonl" "${sets[@]}"
}

full() {  # every workload, one process: what bench_gpu's setup_cache costs a commit
    "$PY" experiments/gpu/measure_once.py "$OUT/measurements.jsonl" --label full \
        --device "$DEVICE" --preset "$PRESET"
}

pair_a() {
    "$PY" experiments/gpu/measure_once.py "$OUT/measurements.jsonl" --label a \
        --device "$DEVICE" --preset "$PRESET" --workloads "$WORKLOADS" --rows "$OUT/rows.jsonl"
}

pair_b() {
    local far=/tmp/a-second-clone-of-torchpulse-at-a-much-longer-path/checkout/torchpulse
    local elsewhere=/tmp/another-working-directory hogs=() rc i
    rm -rf "$far" && mkdir -p "$far" "$elsewhere" && cp -r src experiments "$far/" || return 1
    for i in $(seq 1 "${HOGS:-8}"); do yes > /dev/null & hogs+=($!); done
    # the machine's own variables stay (CUDA's libraries may need them); these differ
    export HOME=$elsewhere ASV_MACHINE=gpu-b PYTHONPATH="$far/src${PYTHONPATH:+:$PYTHONPATH}"
    CI_NOISE=$(head -c 5000 /dev/zero | tr '\0' x) && export CI_NOISE
    (cd "$elsewhere" &&
     "$PY" -c 'import torchpulse, sys; print("pair b imports", torchpulse.__file__)' &&
     "$PY" "$far/experiments/gpu/measure_once.py" "$OUT/measurements.jsonl" --label b \
        --device "$DEVICE" --preset "$PRESET" --workloads "$WORKLOADS" \
        --rows "$OUT/rows.jsonl")
    rc=$?
    kill "${hogs[@]}" 2> /dev/null
    return $rc
}

trial() {  # the wall-time bursts trial (bursts-trial.patch, 3b487ff) in a copy of the tree:
    # two processes of the same selection; does GPU memory repeat when the workloads stay built?
    local copy=$WORK/trial
    rm -rf "$copy" && mkdir -p "$copy" && cp -r src benchmarks experiments "$copy/" &&
        (cd "$copy" && patch -p1 -s < experiments/gpu/bursts-trial.patch) || return 1
    export PYTHONPATH="$copy/src${PYTHONPATH:+:$PYTHONPATH}"
    "$PY" -c 'import torchpulse.gpu.measure as m, sys; print("trial imports", m.__file__,
"bursts", getattr(m, "BURSTS", None))' || return 1
    for label in t1 t2; do
        "$PY" "$copy/experiments/gpu/measure_once.py" "$OUT/measurements.jsonl" \
            --label "$label" --device "$DEVICE" --preset "$PRESET" --workloads "$WORKLOADS" \
            --rows "$OUT/trial-rows.jsonl" || return 1
    done
    "$PY" experiments/gpu/pair.py "$OUT/trial-rows.jsonl" --labels t1,t2
}

export -f setup asv_full repeat planted envs full pair_a pair_b pinning cheap trial
export PY DEVICE PRESET REPEATS WORKLOADS WORK OUT HOGS PIN CHEAP
t0=$SECONDS
step setup 120 bash -c setup
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site ASV_PYTHONPATH=/tmp/site
step gpu_tests "${TESTS_CAP:-150}" "$PY" -m pytest -p no:cacheprovider -m gpu tests/gpu -q \
    -k "${TESTS_K:-}"
step cost "${COST_CAP:-120}" "$PY" experiments/gpu/process_cost.py --device "$DEVICE" \
    --preset "$PRESET"
step pair_a "${PAIR_CAP:-240}" bash -c pair_a
step pair_b "${PAIR_CAP:-240}" bash -c pair_b
if [[ " $STEPS " == *" pair_b "* ]]; then
    "$PY" experiments/gpu/pair.py "$OUT/rows.jsonl" 2>&1 | tee "$OUT/pair.txt" >> "$LOG"
fi
step pinning "${PINNING_CAP:-240}" bash -c pinning
step cheap "${CHEAP_CAP:-240}" bash -c cheap
step repeat "${REPEAT_CAP:-420}" bash -c repeat
step planted "${PLANTED_CAP:-150}" bash -c planted
step envs "${ENVS_CAP:-240}" bash -c envs
step full "${FULL_CAP:-400}" bash -c full
step trial "${TRIAL_CAP:-480}" bash -c trial
step asv_full "${ASV_CAP:-420}" bash -c asv_full
grep -h -A12 '^workload ' "$WORK/cost.log" 2>/dev/null | tail -8
grep -h '^asv run\|seconds\|by module' "$WORK/asv_full.log" 2>/dev/null
grep -h 'measured,' "$WORK/repeat.log" "$WORK/planted.log" "$WORK/full.log" \
    "$WORK/pinning.log" "$WORK/cheap.log" 2>/dev/null
tail -3 "$WORK/gpu_tests.log" 2>/dev/null
tar czf "$OUT/files.tgz" -C "$WORK" .
echo "total        $((SECONDS - t0))s" | tee -a "$SUMMARY"
