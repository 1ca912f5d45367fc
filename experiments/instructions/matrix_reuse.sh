#!/usr/bin/env bash
# A count is never reused across two asv environments of one matrix (issue 87, item 1):
# asv builds one environment per version of a small plugin package that torch loads at
# import (a torch.backends entry point; 2.0 wraps torch.mm in Python, 1.0 does nothing),
# both from the same base interpreter, and counts the py LSTM's group in each with reuse
# on. Before the reuse fix (reuse format 1) the second environment was handed the first's
# figures; each must count its own. A second `asv run` then reuses each environment's own
# count, to the instruction.
#
#     bash experiments/instructions/matrix_reuse.sh DIR [REV]
#
# REV (default HEAD) is the commit asv builds and counts: c91c185, before the fix, FAILs.
# Prints each environment's counts, what the counting said, and PASS or FAIL: PASS when each
# environment counted its own in the first run (none reused), took its own back in the
# second, the same to the instruction, and 2.0's wrapped torch.mm counts higher (the py
# LSTM's forward calls it; its backward does not, and differs by a few instructions).
set -eu
DIR=${1:?usage: matrix_reuse.sh DIR [REV]}
REV=${2:-HEAD}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
ASV="$HERE/.venv/bin/asv"
rm -rf "$DIR" && mkdir -p "$DIR/wheels"
DIR=$(cd "$DIR" && pwd)
git clone -q "$HERE" "$DIR/repo"
git -C "$DIR/repo" checkout -q -B main "$(git -C "$HERE" rev-parse "$REV")"
# the plugin's two versions as wheels (made here: no build backend needed)
"$HERE/.venv/bin/python" - "$DIR/wheels" <<'PY'
import base64, hashlib, sys, zipfile
from pathlib import Path
CODE = {"1.0": "def load():\n    return None\n",
        "2.0": ("import torch\n\n_mm = torch.mm\n\n\ndef _watched_mm(*args, **kwargs):\n"
                "    sum(range(1000))\n    return _mm(*args, **kwargs)\n\n\n"
                "def load():\n    torch.mm = _watched_mm\n")}
for version, code in CODE.items():
    info = f"tp_plugin-{version}.dist-info"
    files = {"tp_plugin/__init__.py": code,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: tp-plugin\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: matrix_reuse\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             f"{info}/entry_points.txt": "[torch.backends]\ntp_plugin = tp_plugin:load\n"}
    record = "".join(
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},{len(text.encode())}\n"
        for name, text in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(Path(sys.argv[1]) / f"tp_plugin-{version}-py3-none-any.whl", "w") as whl:
        for name, text in {**files, f"{info}/RECORD": record}.items():
            whl.writestr(name, text)
PY
cd "$DIR/repo"
sed -i 's/"setuptools": "80.9.0"/"setuptools": "80.9.0", "tp-plugin": ["1.0", "2.0"]/' asv.conf.json
grep -q '"tp-plugin"' asv.conf.json
export PIP_FIND_LINKS="${PIP_FIND_LINKS:-} $DIR/wheels"
export TORCHPULSE_INSTRUCTIONS='rnns/py/*' XDG_CACHE_HOME="$DIR/cache"
"$ASV" machine --yes --machine mx >/dev/null
for round in 1 2; do
    start=$(date +%s)
    TORCHPULSE_COUNT_LOG="$DIR/counts-$round.jsonl" "$ASV" run --machine mx --show-stderr \
        --bench 'bench_instructions' "HEAD^!" > "$DIR/run-$round.log" 2>&1 || true
    echo "asv run $round: $(( $(date +%s) - start )) s"
    cp -r results/mx "$DIR/results-$round"
done
"$HERE/.venv/bin/python" - "$DIR" <<'PY'
import json, sys
from pathlib import Path
d = Path(sys.argv[1])
def counts(folder):
    found = {}
    for f in sorted(folder.glob("*-*.json")):
        r = json.loads(f.read_text())
        env = "plugin 2.0" if "tp-plugin2.0" in r["env_name"] else "plugin 1.0"
        res = r["results"].get("bench_instructions.Instructions.track_instructions")
        if res:
            found[env] = {w: v for w, v in zip(res[1][0], res[0]) if v is not None}
    return found
one, two = counts(d / "results-1"), counts(d / "results-2")
for env in sorted(one):
    for w, v in sorted(one[env].items()):
        print(f"{env:11} {w:24} first {v:>14,.0f}   second {two.get(env, {}).get(w, float('nan')):>14,.0f}")
for f in sorted(d.glob("counts-*.jsonl")):
    for line in f.read_text().splitlines():
        print(f.name, line[:200])
# each environment counted its own the first time, and took its own back the second
said = {f.name: [json.loads(line) for line in f.read_text().splitlines()]
        for f in sorted(d.glob("counts-*.jsonl"))}
first, again = said.get("counts-1.jsonl", []), said.get("counts-2.jsonl", [])
a, b = one.get("plugin 1.0", {}), one.get("plugin 2.0", {})
forward = "'rnns/py/forward'"
ok = (len(first) == len(again) == 2 and all(s["reused"] == 0 and s["counted"] > 0 for s in first)
      and all(s["counted"] == 0 and s["reused"] > 0 for s in again)
      and forward in a and forward in b and b[forward] > a[forward] * 1.01 and one == two)
print("PASS" if ok else "FAIL")
PY
