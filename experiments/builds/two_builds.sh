#!/bin/bash
# The real case of docs/pytorch-builds.md, end to end: two torch builds compared now
# (compare --python), then recorded as two commits of a stand-in repository and compared
# from their stored results (compare --stored). Every step's wall time goes to $W/times.
#   bash experiments/builds/two_builds.sh A/bin/python B/bin/python WORKDIR
# Each environment needs torchpulse installed beside its torch (pip install --no-deps -e .).
# RECORDS=2 records each build twice (old, new, old, new: --stored then decides the timed
# series too); COMPARE=0 leaves out compare --python (15 minutes on 2 cores);
# BENCH=RE the suites recorded.
set -euo pipefail
A=$1 B=$2 W=$3
HERE=$(cd "$(dirname "$0")/../.." && pwd)
TP=${TORCHPULSE:-$HERE/.venv/bin/torchpulse}
mkdir -p "$W" && W=$(cd "$W" && pwd)
export XDG_CACHE_HOME=$W/cache  # no count kept from an earlier run
stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%T)" "$line"; done; }
timed() {  # timed NAME COMMAND...: its stdout in $W/NAME.txt, stderr stamped in $W/NAME.log
  local name=$1 start; shift; start=$(date +%s)
  set +e; "$@" > "$W/$name.txt" 2> >(stamp > "$W/$name.log"); local rc=$?; set -e
  echo "$name: $(( $(date +%s) - start )) s, exit $rc" | tee -a "$W/times"
}
: > "$W/times"
if [ "${COMPARE:-1}" != 0 ]; then
  timed compare "$TP" compare --python "$A" --python "$B" --format json \
    --output "$W/compare.json"
fi

# the stand-in repository: one commit a build
R=$W/repo; rm -rf "$R" "$W/dash"; mkdir -p "$R" "$W/dash"
git -C "$R" init -q -b main
for v in old new; do
  echo "$v" > "$R/build"; git -C "$R" add build
  git -C "$R" -c user.name=t -c user.email=t@t commit -qm "torch $v"
done
OLD=$(git -C "$R" rev-parse HEAD~1) NEW=$(git -C "$R" rev-parse HEAD)
cat > "$W/dash/asv.conf.json" <<CONF
{"version": 1, "project": "pytorch", "project_url": "https://example.invalid/",
 "repo": "$R", "branches": ["main"], "dvcs": "git", "environment_type": "virtualenv",
 "benchmark_dir": "$HERE/benchmarks", "launch_method": "forkserver",
 "results_dir": "results", "html_dir": "html"}
CONF
BENCH=${BENCH:-'^(_canary|bench_instructions|bench_rnns)\.'}
cd "$W/dash"
for i in $(seq "${RECORDS:-1}"); do
  timed "record-old-$i" "$(dirname "$A")/torchpulse" record --commit "$OLD" --bench "$BENCH" \
    --machine builds
  timed "record-new-$i" "$(dirname "$B")/torchpulse" record --commit "$NEW" --bench "$BENCH" \
    --machine builds
done
timed stored "$TP" compare "$OLD" "$NEW" --stored
"$TP" compare "$OLD" "$NEW" --stored --format json --output "$W/stored.json" >/dev/null || true
cat "$W/times"
