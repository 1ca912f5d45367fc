#!/usr/bin/env bash
# Every CUDA path of torchpulse once, on the GPU machine (issue 37; figures in docs/gpu.md).
# Sent with the device tool from the repository root, asv's wheels carried in .whl/:
#     run(command="bash experiments/gpu/verify.sh", carry=[".whl"], timeout_s=590)
# Each step has its own time cap and the next one runs whatever the last one did. The
# checks and timings (phase A) run alone on the GPU; the other paths (phase B) side by side.
# What comes back in $OUT: summary.txt (one line a step: exit code and seconds), all.log
# (every step's output), files.tgz (CSV, JSON, profiles' key averages, asv's results).
# Dry run on a CPU machine: DEVICE=cpu PRESET=smoke GPU=-1 bash experiments/gpu/verify.sh
# ONLY="check clock" runs those steps alone; ASV_BENCH and ASV_CAP narrow the asv step,
# DYN_ARGS (appended: "-k lstm --timeout 150") and DYN_CAP the dynamo training step;
# NO_INSTALL=1 keeps the editable install of another checkout (a dry run from a copy).
set -u
OUT=${OUT:-/tmp/gpu-verify}
DEVICE=${DEVICE:-cuda}
PRESET=${PRESET:-cuda}
GPU=${GPU:-0}
PY=${PY:-python3}
WORK=$(mktemp -d)
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
LOG=$OUT/all.log
export PYTHONUNBUFFERED=1
TP=("$PY" -m torchpulse.cli)

step() {  # step NAME CAP COMMAND...: run it under a time cap, keep its output, one line
    local name=$1 cap=$2 t0=$SECONDS rc
    shift 2
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
    timeout -k 5 "$cap" "$@" > "$WORK/$name.log" 2>&1
    rc=$?
    { printf '\n===== %s (cap %ss, rc %s): %s\n' "$name" "$cap" "$rc" "$*"
      cat "$WORK/$name.log"; } >> "$LOG"
    printf '%-14s rc=%-4s %4ss\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$SUMMARY"
}

# --- setup: asv from the carried wheels, torchpulse over the machine's own (CUDA) torch ----
t0=$SECONDS
if [ -d .whl ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl >> "$LOG" 2>&1
    export PYTHONPATH=/tmp/site ASV_PYTHONPATH=/tmp/site  # asv drops PYTHONPATH otherwise
fi
if [ -z "${NO_INSTALL:-}" ] && ! "$PY" -m pip install -q --no-deps --no-build-isolation \
        -e . >> "$LOG" 2>&1; then
    echo "editable install failed: torchpulse from src/ through PYTHONPATH" | tee -a "$SUMMARY"
    export PYTHONPATH=$PWD/src:${PYTHONPATH:-} ASV_PYTHONPATH=$PWD/src:${ASV_PYTHONPATH:-}
fi
echo "setup          ${SECONDS}s" | tee -a "$SUMMARY"
step info 30 bash -c "nvidia-smi; $PY -c 'import torch, sys; print(sys.version); \
print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), \
torch.cuda.is_available() and torch.cuda.get_device_name())'; ${TP[*]} --version; \
$PY -m asv --version; git --version; nproc"

# --- phase A: timings and checks, one at a time -----------------------------------------
step check 40 "${TP[@]}" check --device "$DEVICE" --preset "$PRESET"
step pytest_gpu 60 "$PY" -m pytest -p no:cacheprovider -m gpu tests/gpu -q
step clock 70 "$PY" experiments/gpu/clock_check.py --device "$DEVICE" --preset "$PRESET" \
    --output "$WORK/clock.jsonl"
step bench 90 "${TP[@]}" bench --device "$DEVICE" --preset "$PRESET"
step oss 90 bash -c "${TP[*]} bench --device $DEVICE --preset $PRESET --nloops 20 \
--print-json oss > $WORK/oss.json"
step dynamo 170 "${TP[@]}" dynamo --performance --inference --device "$DEVICE" \
    --preset "$PRESET" --repeat 10 --timeout 60 --output "$WORK/dynamo_performance.csv"

# --- phase B: every other path, side by side (their timings are not figures) -------------
(
    step pep 40 bash -c "${TP[*]} bench --device $DEVICE --preset $PRESET --nloops 5 \
--rnns cudnn jit --cnns resnet50 --print-json pep > $WORK/pep.json"
    # the variable-length runners loop over sequences: seconds a step on the GPU
    step varlen 80 "${TP[@]}" bench --device "$DEVICE" --preset "$PRESET" --warmup 2 \
        --nloops 2 --rnns vl_cudnn vl_jit vl_py --group rnns
) &
(
    step profile 60 "${TP[@]}" profile --rnns cudnn jit --cnns resnet50 --device "$DEVICE" \
        --preset "$PRESET" --nloops 3 --output "$WORK/profile"
    step autograd 90 "${TP[@]}" autograd --gpu "$GPU" --preset "$PRESET" --num-iters 5 \
        --model-filter resnet18 ppl_simple_reg wav2letter transformer multiheadattn \
        --output "$WORK/autograd.md"
) &
(
    # training mode and the accuracy check of the compile zoo (compiled against eager)
    step dyn_train "${DYN_CAP:-150}" "${TP[@]}" dynamo --performance --training \
        --device "$DEVICE" --preset "$PRESET" --repeat 5 --timeout 40 \
        --output "$WORK/dynamo_training.csv" ${DYN_ARGS:-}
    step dyn_acc 150 "${TP[@]}" dynamo --accuracy --inference --device "$DEVICE" \
        --preset "$PRESET" --timeout 40 --output "$WORK/dynamo_accuracy.csv"
) &
(
    # asv over this machine's python (no environment built), two samples a benchmark
    if [ ! -d .git ] && command -v git > /dev/null; then
        git init -q -b main && git add -A && git -c user.name=gpu -c user.email=gpu@localhost \
            commit -qm "the tree sent to the GPU machine"
    fi
    # on CUDA runs bench_gpu measures every workload (the per-process suites skip there)
    step asv "${ASV_CAP:-400}" env TORCHPULSE_PRESET="$PRESET" TORCHPULSE_DEVICE="$DEVICE" \
        bash -c "$PY -m asv machine --yes && $PY -m asv run -E existing:$(command -v "$PY") \
--set-commit-hash \$(git rev-parse HEAD) -a rounds=1 -a repeat=2 --record-samples \
--show-stderr --bench '${ASV_BENCH:-^bench_gpu\.}'"
    # what torchpulse reads from those results (one commit: units, rules, skip reasons)
    step report 60 bash -c "${TP[*]} alert --format json --output $WORK/alert.json; \
${TP[*]} alert"
) &
wait

rm -f "$WORK"/profile/*.trace.json  # tens of MB each; the key averages stay
cp -r results "$WORK/asv-results" 2>/dev/null
tar czf "$OUT/files.tgz" -C "$WORK" .
echo "total          ${SECONDS}s" | tee -a "$SUMMARY"
