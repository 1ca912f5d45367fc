"""The walk of `torchpulse dashboard`'s arguments through the code: the torchpulse functions
handed the dashboard's Options, its Settings or the Project during one dashboard run (a
synthetic project, asv scripted as tests/test_dashboard.py does, with publish), each
counted once, in the order first reached. A stay is one such function; a climb back is a
stay in an earlier stage (tests/test_layout.py's STAGES) than the stay before it.

    python experiments/dashboard_walk.py [WORKDIR]

Run it at two commits to compare them (the figure of issue 86's "Done when").
"""

import re
import shutil
import sys
import tempfile
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_layout import STAGES, stage_of  # noqa: E402

from torchpulse import dashboard  # noqa: E402
from torchpulse.evaluation import synthetic  # noqa: E402
from torchpulse.results.project import Project  # noqa: E402

PACKAGE = ROOT / "src" / "torchpulse"


def main(workdir: Path) -> None:
    shutil.rmtree(workdir, ignore_errors=True)
    truths = synthetic.build(workdir / "project", commits=12, per_cell=1, noise_series=2,
                             seed=3, distances=(1,))
    project = Project.load(workdir / "project" / "asv.conf.json")

    def asv(args, env):  # as tests/test_dashboard.py's FakeAsv
        if args[0] == "run" and "--skip-existing-successful" not in args:
            path = next(a[len("HASHFILE:"):] for a in args if a.startswith("HASHFILE:"))
            bench = args[args.index("--bench") + 1]
            names = {t.benchmark for t in truths if re.match(bench, t.benchmark)}
            synthetic.remeasure(project.root, truths, open(path).read().split(), names,
                                seed=7)
        return 0

    options = dashboard.Options(publish=True)
    assets = ROOT / "node_modules"
    if assets.is_dir():
        options = dashboard.Options(publish=True, assets=str(assets))
    followed = {id(options), id(options.settings), id(project)}
    stays: list[str] = []
    seen: set[str] = set()

    def profile(frame, event, arg):
        if event != "call":
            return
        path = frame.f_code.co_filename
        if not path.startswith(str(PACKAGE)):
            return
        if any(id(v) in followed for v in frame.f_locals.values()):
            here = f"{Path(path).relative_to(PACKAGE)}:{frame.f_code.co_name}"
            if here not in seen:
                seen.add(here)
                stays.append(here)

    sys.setprofile(profile)
    try:
        dashboard.run(project, options, asv=asv, say=lambda line: None)
    finally:
        sys.setprofile(None)

    def stage(stay: str) -> int:
        part = stay.split(":")[0].split("/")[0].removesuffix(".py")
        return stage_of(part) if any(part in s for s in STAGES) else -1

    climbs = sum(1 for a, b in pairwise(stays) if stage(b) < stage(a))
    files = {s.split(":")[0] for s in stays}
    print(f"{len(stays)} stays in {len(files)} files, {climbs} climbs back")
    print(" -> ".join(stays))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "walk")
