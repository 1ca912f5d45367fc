"""What of torchpulse a stage holds: what the counted process imports, and nothing else."""

import os
import subprocess
import sys

from torchpulse.instructions import normalised, worker

# the counted process's start (worker.IMPORTS, but its stage calls), then every workload's
# build at the counting sizes, each called once, from the stage's copy of torchpulse alone
BUILD_ALL = """
import sys
copy = sys.argv[1]
sys.path.insert(0, copy)
{imports}
import torchpulse
assert torchpulse.__file__.startswith(copy), torchpulse.__file__
from torchpulse import sizes
from torchpulse.autograd import choices as autograd
from torchpulse.fastrnns import choices as fastrnns
from torchpulse.instructions import windows
from torchpulse.workloads import registry
failed = []
for name in registry.workloads(fastrnns, autograd):
    try:
        run, _ = windows.build(name, sizes.counting())
        run()
    except ImportError as exc:
        failed.append((name, str(exc)))
    except ValueError:
        pass  # a region this workload has not (a forward-only runner's backward)
outside = sorted(m.__file__ for n, m in list(sys.modules.items()) if n.startswith("torchpulse")
                 and getattr(m, "__file__", None) and not m.__file__.startswith(copy))
print(failed, outside)
"""


def test_a_stage_holds_every_module_the_counted_process_and_its_builds_import(tmp_path):
    """Built from a stage's copy alone, every workload imports what it needs; a module the
    list lacks would fail its count with an ImportError."""
    normalised.copy_counted(normalised.PACKAGE, tmp_path / "torchpulse")
    staged = {str(p.relative_to(tmp_path / "torchpulse"))
              for p in (tmp_path / "torchpulse").rglob("*") if p.is_file()}
    assert staged == set(normalised.COUNTED_SOURCES)
    imports = "\n".join(line for line in worker.IMPORTS.splitlines()
                        if line.startswith("import ") and "stage_paths" not in line)
    done = subprocess.run([sys.executable, "-c", BUILD_ALL.format(imports=imports),
                           str(tmp_path)], capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[] []"


def test_a_file_more_in_the_package_is_not_in_any_stage(tmp_path, monkeypatch):
    """The import system lists the folders it imports from, and a file more there moved
    counts by up to 0.47 %: a module the counted process does not import stays out."""
    package = tmp_path / "torchpulse"
    for relative in normalised.COUNTED_SOURCES:
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text("")
    (package / "instructions" / "count.py").write_text("")  # the parent's side
    (package / "site").mkdir()
    (package / "site" / "page.py").write_text("")
    normalised.copy_counted(package, tmp_path / "copy")
    assert not (tmp_path / "copy" / "instructions" / "count.py").exists()
    assert not (tmp_path / "copy" / "site").exists()
    assert (tmp_path / "copy" / "instructions" / "worker.py").exists()
