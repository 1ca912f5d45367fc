#!/bin/sh
# Alert cost on a generated history (experiments/scale_history.py): cold (no index, no
# cached verdicts), warm (nothing new), and after one new commit (the newest results file
# added to an index built without it). Usage: experiments/scale_alert.sh PROJECT_DIR
set -e
cd "$1"
TP=${TORCHPULSE:-/work/main/.venv/bin/torchpulse}
newest=$(ls results/*/$(git rev-parse main | cut -c1-8)-*.json)
rm -rf .asv/torchpulse-index
/usr/bin/time -f "cold    %e s, max RSS %M KB" "$TP" alert --format json --output /tmp/scale-cold.json >/dev/null 2>/tmp/scale-time || true; tail -1 /tmp/scale-time
/usr/bin/time -f "warm    %e s, max RSS %M KB" "$TP" alert --format json --output /tmp/scale-warm.json >/dev/null 2>/tmp/scale-time || true; tail -1 /tmp/scale-time
mv $newest /tmp/scale-newest.json
"$TP" alert --format json --output /tmp/scale-before.json >/dev/null 2>&1 || true
sleep 3
mv /tmp/scale-newest.json "$newest"
/usr/bin/time -f "one new %e s, max RSS %M KB" "$TP" alert --format json --output /tmp/scale-new.json >/dev/null 2>/tmp/scale-time || true; tail -1 /tmp/scale-time
cmp /tmp/scale-cold.json /tmp/scale-warm.json && cmp /tmp/scale-cold.json /tmp/scale-new.json && echo "the three reports are identical"
