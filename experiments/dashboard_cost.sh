#!/usr/bin/env bash
# What `make dashboard` costs, every line of its output stamped with the clock (figures in
# docs/measurements.md, "Per-commit cost of the default suite").
#
#     bash experiments/dashboard_cost.sh fresh DIR > fresh.log
#         clones this repository into DIR (which must not exist yet) and runs the README's
#         `make dashboard` there: the set-up, the last five commits, publishing, the alert
#     bash experiments/dashboard_cost.sh later DIR > later.log
#         in DIR, a clone that has run the dashboard once: commits a docs change there and
#         runs `make dashboard N=1` with the counts' reuse off, as a later commit that changes
#         what is counted would cost; TORCHPULSE_INSTRUCTIONS chooses what is counted
#
# Run nothing else meanwhile: the wall-time suites and the zoo share the machine's cores.
set -eu
MODE=${1:-}
DIR=${2:-}
if [ -z "$DIR" ]; then
    echo "usage: dashboard_cost.sh fresh|later DIR" >&2
    exit 2
fi
HERE=$(cd "$(dirname "$0")/.." && pwd)

stamped() {
    local start
    start=$(date +%s)
    echo "start $(date -u) TORCHPULSE_INSTRUCTIONS=${TORCHPULSE_INSTRUCTIONS:-default}"
    set +e
    "$@" 2>&1 | while IFS= read -r line; do printf '%s %s\n' "$(date +%H:%M:%S)" "$line"; done
    local rc=${PIPESTATUS[0]}
    set -e
    echo "rc $rc, $(( $(date +%s) - start )) s, ended $(date -u)"
}

case $MODE in
fresh)
    if [ -e "$DIR" ]; then
        echo "$DIR exists: give a new folder" >&2
        exit 2
    fi
    git clone -q "$HERE" "$DIR"
    cd "$DIR"
    stamped make dashboard
    ;;
later)
    if [ ! -d "$DIR/results" ] || [ ! -d "$DIR/.venv" ]; then
        echo "$DIR has not run the dashboard yet: run the fresh mode first" >&2
        exit 2
    fi
    cd "$DIR"
    echo "<!-- a later commit, $(date -u) -->" >> docs/measurements.md
    git -c user.name=dashboard-cost -c user.email=dashboard-cost@localhost \
        commit -q -m "a later commit (experiments/dashboard_cost.sh)" docs/measurements.md
    TORCHPULSE_COUNT_REUSE=no stamped make dashboard N=1
    ;;
*)
    echo "usage: dashboard_cost.sh fresh|later DIR" >&2
    exit 2
    ;;
esac
