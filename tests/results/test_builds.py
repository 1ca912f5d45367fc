"""The torch build a recorded commit ran with: read from torch/version.py as torch writes it,
stored beside the results, read back only when it is one, and named by the alert."""

import os

import pytest

from torchpulse.analysis.model import Alert
from torchpulse.analysis.series import SeriesKey
from torchpulse.reports.phrases import builds_text
from torchpulse.results import builds

SHA, OTHER = "a" * 40, "b" * 40
VERSION_PY = '''from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']
__version__ = '2.14.1+cu130'
debug = False
cuda: Optional[str] = '13.0'
git_version = '5811a8d7da873dd699ff6687092c225caffcf1bb'
hip: Optional[str] = None
'''


def test_a_build_is_read_from_torchs_version_file_without_importing_it(tmp_path):
    (tmp_path / "version.py").write_text(VERSION_PY)
    build = builds.of_version_file(tmp_path / "version.py")
    assert build == builds.Build("2.14.1+cu130", "5811a8d7da873dd699ff6687092c225caffcf1bb",
                                 "13.0", False)
    assert build.kind == "CUDA 13.0"
    import torch  # this suite's own: a CPU build

    from torchpulse.results import record
    assert record.torch_build().version == torch.__version__
    assert record.torch_build().cuda == torch.version.cuda
    assert builds.of_version_file(tmp_path / "missing.py") is None


@pytest.mark.parametrize("version", ["", "2.1\n<script>", "\x1b[2J", 7, "a" * 200])
def test_a_version_that_is_not_one_is_never_taken(tmp_path, version):
    (tmp_path / "version.py").write_text(f"__version__ = {version!r}\n")
    assert builds.of_version_file(tmp_path / "version.py") is None


def test_a_stored_build_is_read_back_and_anything_else_is_none(tmp_path):
    build = builds.Build("2.13.0+cpu", "c" * 40, None, False)
    env = "existing-py_proj_.asv_record_python"
    target = builds.write(tmp_path, SHA, env, build)
    assert target == tmp_path / ".asv" / "builds" / f"{SHA}-{env}.json"
    assert builds.read(tmp_path, SHA, env) == build
    assert builds.read(tmp_path, OTHER, env) is None
    assert builds.write(tmp_path, SHA, "../up", build) is None  # no file may be named so
    assert builds.read(tmp_path, "HEAD", "e") is None
    target.write_text('{"version": "<script>"}')
    assert builds.read(tmp_path, SHA, env) is None
    target.unlink()
    os.symlink("/dev/zero", target)  # never read: it does not end
    assert builds.read(tmp_path, SHA, env) is None


def test_the_alert_names_the_builds_either_side_of_its_change():
    key = SeriesKey("bench_instructions.Instructions.track_instructions", ("'rnns/py/forward'",),
                    "m", "e")
    alert = Alert(key, SHA, OTHER, 1.0, 1.1, "instructions", None)
    assert builds_text(alert) == ""
    alert = Alert(key, SHA, OTHER, 1.0, 1.1, "instructions", None, builds=(
        builds.Build("2.13.0+cpu", "c" * 40), builds.Build("2.14.1+cu130", None, "13.0")))
    assert builds_text(alert) == ("torch 2.13.0+cpu (CPU, git cccccccccccc) -> "
                                  "torch 2.14.1+cu130 (CUDA 13.0)")


def test_a_link_planted_on_the_way_is_not_written_through(tmp_path):
    """`.asv/builds` linked out of the project: the build is not stored there."""
    root, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    (root / ".asv").mkdir(parents=True)
    elsewhere.mkdir()
    (root / builds.FOLDER).symlink_to(elsewhere, target_is_directory=True)
    assert builds.write(root, SHA, "env", builds.Build("2.13.0+cpu")) is None
    assert list(elsewhere.iterdir()) == []
