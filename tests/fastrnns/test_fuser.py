import pytest

from torchpulse.cli import main
from torchpulse.fastrnns import fuser
from torchpulse.fastrnns.fuser import FuserError, JitSwitches, jit_settings, switches_for

BASE = JitSwitches(profiling_executor=True, optimize=True, fuse_on_cpu=False, fuse_on_gpu=True,
                   texpr=True)


@pytest.mark.parametrize("fuser_name, executor, device, expected", [
    ("default", "default", "cpu", BASE),
    ("te", "default", "cpu", JitSwitches(True, True, True, False, True)),
    ("te", "default", "cuda", JitSwitches(True, True, False, True, True)),
    ("old", "default", "cuda", JitSwitches(False, False, False, True, False)),
    ("none", "default", "cpu", JitSwitches(False, False, False, False, False)),
    # --executor overrides --fuser, as upstream
    ("none", "profiling", "cpu", JitSwitches(True, True, False, False, False)),
    ("default", "simple", "cpu", JitSwitches(True, False, False, True, True)),
    ("old", "legacy", "cpu", JitSwitches(False, True, False, True, False)),
])
def test_switches_follow_upstreams_set_fuser(fuser_name, executor, device, expected):
    assert switches_for(fuser_name, executor, device, BASE) == expected


def test_unknown_names_are_refused():
    with pytest.raises(FuserError, match="unknown fuser 'nnc'"):
        switches_for("nnc", "default", "cpu", BASE)
    with pytest.raises(FuserError, match="unknown executor 'fast'"):
        switches_for("default", "fast", "cpu", BASE)


def test_settings_apply_inside_and_are_restored_after():
    before = JitSwitches.current()
    with jit_settings("none", "simple", "cpu") as applied:
        assert JitSwitches.current() == applied
        assert not applied.profiling_executor and not applied.optimize and not applied.texpr
    assert JitSwitches.current() == before


def test_a_setting_torch_cannot_run_fails_at_start_and_restores(monkeypatch):
    def probe(device):
        raise RuntimeError("The following operation failed\n\nRuntimeError: LLVM Backend "
                           "not found\n")

    monkeypatch.setattr(fuser, "probe", probe)
    before = JitSwitches.current()
    with pytest.raises(FuserError, match=r"--fuser te .*cannot run on cpu .*LLVM Backend not "
                       "found.*try --fuser default"):
        with jit_settings("te", "default", "cpu"):
            pytest.fail("the block must not run")
    assert JitSwitches.current() == before


def test_probe_runs_a_fusible_function_forward_and_backward():
    with jit_settings("none", "legacy", "cpu"):
        fuser.probe("cpu")  # raises if torch cannot run it


def test_bench_reports_an_unrunnable_fuser_as_a_usage_error(monkeypatch, capsys):
    def probe(device):
        raise RuntimeError("LLVM Backend not found")

    monkeypatch.setattr(fuser, "probe", probe)
    rc = main(["bench", "--rnns", "jit", "--group", "rnns", "--fuser", "te", "--preset",
               "smoke", "--device", "cpu"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "cannot run on cpu" in err


def test_bench_runs_jit_under_a_non_default_executor(capsys):
    rc = main(["bench", "--rnns", "jit", "--group", "rnns", "--fuser", "none", "--executor",
               "simple", "--preset", "smoke", "--device", "cpu", "--nloops", "2",
               "--warmup", "4", "--print-json"])
    assert rc == 0
    assert capsys.readouterr().out.startswith('{"lstm": {"jit": ')
