import dataclasses
import json

import pytest
from clirun import exit_code

from torchpulse.cli import main
from torchpulse.fastrnns import bench
from torchpulse.fastrnns.bench import BenchFailure, BenchResult
from torchpulse.fastrnns.runners import RUNNERS
from torchpulse.timing import Measurement

SMOKE_ARGS = ["--preset", "smoke", "--device", "cpu", "--nloops", "3", "--warmup", "1"]


def _result(name, group, fwd, bwd):
    return BenchResult(name, group, Measurement.of(fwd), Measurement.of(bwd))


# --------------------------------------------------------------------------- selection


def test_defaults_are_upstreams_and_ordered_vl_lstm_resnet():
    names = [r.name for r in bench.select_runners(None, None, variable_lstms=True)]
    assert names == ["vl_cudnn", "vl_jit", "vl_py", *bench.DEFAULT_RNNS, *bench.DEFAULT_CNNS]


def test_group_limits_the_lists_and_empty_names_mean_defaults():
    assert [r.name for r in bench.select_runners(["py"], ["resnet50"], ["cnns"])] == ["resnet50"]
    assert [r.name for r in bench.select_runners([], None, ["rnns"])] == list(bench.DEFAULT_RNNS)


def test_variable_length_names_land_in_their_own_group():
    runners = bench.select_runners(["vl_py", "cudnn"], None, ["rnns"])
    assert [(r.name, r.group) for r in runners] == [("vl_py", "vl_lstm"), ("cudnn", "lstm")]


def test_a_resnet_given_to_rnns_is_refused():
    with pytest.raises(bench.SelectionError, match="resnet18 cannot be given to --rnns"):
        bench.select_runners(["resnet18"], None)


# --------------------------------------------------------------------------- formats


OUTCOMES = [
    _result("cudnn", "lstm", [0.010, 0.012], [0.020, 0.030]),
    BenchFailure("jit", "lstm", "RuntimeError: boom"),
    _result("resnet18", "resnet", [0.5, 0.7, 0.6], [1.0, 1.0, 1.0]),
]


def test_oss_is_means_in_milliseconds_and_keeps_groups_of_failed_runners():
    results = bench.oss_results(OUTCOMES, ["vl_lstm", "lstm", "resnet"])
    assert results == {
        "vl_lstm": {}, "vl_lstm-backward": {},
        "lstm": {"cudnn": pytest.approx(11.0)}, "lstm-backward": {"cudnn": pytest.approx(25.0)},
        "resnet": {"resnet18": pytest.approx(600.0)},
        "resnet-backward": {"resnet18": pytest.approx(1000.0)},
    }
    line = bench.format_oss(OUTCOMES, ["lstm", "resnet"])
    assert "\n" not in line and json.loads(line)["lstm"]["cudnn"] == pytest.approx(11.0)


def test_pep_has_one_line_per_iteration_in_milliseconds():
    lines = bench.pep_lines(OUTCOMES)
    assert all(line.startswith("Caffe2Observer {") for line in lines)
    records = [json.loads(line[len("Caffe2Observer "):]) for line in lines]
    metrics = [r["metric"] for r in records]
    assert metrics == (["lstm-cudnn"] * 2 + ["lstm-backward-cudnn"] * 2
                       + ["resnet-resnet18"] * 3 + ["resnet-backward-resnet18"] * 3)
    assert {r["type"] for r in records} == {"NET"} and {r["unit"] for r in records} == {"ms"}
    assert [float(r["value"]) for r in records[:2]] == pytest.approx([10.0, 12.0])
    assert all(isinstance(r["value"], str) for r in records)


def test_table_has_upstreams_columns_and_names_failures():
    assert bench.table_header().split() == list(bench.COLUMNS)
    assert bench.table_header(sep=",").replace(" ", "").split(",") == list(bench.COLUMNS)
    row = bench.table_row(OUTCOMES[0], sep="|").split("|")
    assert [c.strip() for c in row] == ["cudnn", "11", "1.414", "med=11", "25", "7.071",
                                        "med=25"]
    assert bench.table_row(OUTCOMES[1]).split() == ["jit"] + ["failed"] * 6


def test_a_forward_only_runner_has_no_backward_anywhere(capsys):
    """cudnn_layernorm as upstream: no lstm-backward entry, no backward PEP lines, "forward
    only" in the table (upstream prints a near-zero backward time there)."""
    assert main(["bench", "--rnns", "cudnn_layernorm", "cudnn", "--group", "rnns",
                 "--print-json", *SMOKE_ARGS]) == 0
    oss = json.loads(capsys.readouterr().out)
    assert set(oss["lstm"]) == {"cudnn_layernorm", "cudnn"}
    assert set(oss["lstm-backward"]) == {"cudnn"}
    layernorm = BenchResult("cudnn_layernorm", "lstm", Measurement.of([0.002, 0.004]), None)
    assert not [line for line in bench.pep_lines([layernorm]) if "backward" in line]
    row = [c.strip() for c in bench.table_row(layernorm, sep="|").split("|")]
    assert row == ["cudnn_layernorm", "3", "1.414", "med=3", "-", "-", "forward only"]


def test_error_description_is_one_line():
    exc = RuntimeError("The following operation failed\nTraceback:\n  x\nRuntimeError: cause\n")
    assert bench.describe_error(exc) == "RuntimeError: RuntimeError: cause"


# --------------------------------------------------------------------------- command line


def test_acceptance_oss(capsys):
    rc = main(["bench", "--rnns", "cudnn", "aten", "jit", "py", "--cnns", "resnet18",
               "--print-json", "oss", *SMOKE_ARGS])
    out, err = capsys.readouterr()
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 1
    results = json.loads(lines[0])
    assert set(results) == {"lstm", "lstm-backward", "resnet", "resnet-backward"}
    for group in ("lstm", "lstm-backward"):
        assert set(results[group]) == {"cudnn", "aten", "jit", "py"}
    assert set(results["resnet"]) == set(results["resnet-backward"]) == {"resnet18"}
    assert all(v > 0 for g in results.values() for v in g.values())
    note = next(line for line in err.splitlines() if "too short" in line)
    assert "warmup 1" in note and "jit" in note  # jit is timed before it settles


def test_acceptance_pep_rnns_only(capsys):
    rc = main(["bench", "--rnns", "cudnn", "py", "--cnns", "resnet18", "--group", "rnns",
               "--print-json", "pep", *SMOKE_ARGS])
    out, _ = capsys.readouterr()
    assert rc == 0
    counts: dict[str, int] = {}
    for line in out.splitlines():
        prefix, _, payload = line.partition(" ")
        assert prefix == "Caffe2Observer"
        record = json.loads(payload)
        assert float(record["value"]) > 0
        counts[record["metric"]] = counts.get(record["metric"], 0) + 1
    assert counts == {m: 3 for m in ("lstm-cudnn", "lstm-py", "lstm-backward-cudnn",
                                     "lstm-backward-py")}


def test_table_on_stderr_with_the_sizes_asked_for(capsys):
    rc = main(["bench", "--rnns", "cudnn", "--group", "rnns", "--variable-lstms",
               "--hiddenSize", "16", "--sep", ";", *SMOKE_ARGS])
    out, err = capsys.readouterr()
    assert rc == 0 and out == ""
    assert "hiddenSize 16" in err and "times in ms" in err
    assert "Benchmarking variable-length sequence LSTMs..." in err
    header = next(line for line in err.splitlines() if "avg_fwd" in line)
    assert [c.strip() for c in header.split(";")] == list(bench.COLUMNS)
    rows = [line.split(";")[0].strip() for line in err.splitlines() if line.count(";") == 6]
    assert rows == ["name", "vl_cudnn", "vl_jit", "vl_py", "name", "cudnn"]


def test_every_size_flag_is_honoured_at_the_cpu_preset(capsys):
    """The preset fills in only what is not given: the ResNet input and the variable-length
    range follow their flags too."""
    from torchpulse.fastrnns.runners import build_workload
    from torchpulse.presets import PRESETS

    cpu = PRESETS["cpu"]
    preset = bench.with_sizes(cpu, imageBatch=2, imageSize=40, minLength=3, maxLength=6,
                              seqLength=None)
    assert (preset.image_batch, preset.image_size, preset.varlen_bounds) == (2, 40, (3, 6))
    assert preset.seq_length == cpu.seq_length  # not given: the preset's
    image = build_workload("resnet18", preset, "cpu").model.inputs[0]
    assert tuple(image.shape) == (2, 3, 40, 40)
    sequences = build_workload("vl_py", preset, "cpu").model.inputs[0]
    assert len(sequences) == cpu.mini_batch and all(3 <= len(x) < 6 for x in sequences)
    assert bench.with_sizes(cpu, maxLength=30).varlen_bounds == (cpu.varlen_bounds[0], 30)

    assert main(["bench", "--cnns", "resnet18", "--group", "cnns", "--imageBatch", "1",
                 "--imageSize", "33", "--minLength", "2", "--maxLength", "4",
                 *SMOKE_ARGS]) == 0
    assert "images 1x3x33x33, variable lengths 2 to 3" in capsys.readouterr().err
    assert main(["bench", "--minLength", "9", "--maxLength", "9", *SMOKE_ARGS]) == 2
    assert "--minLength 9 must be below --maxLength 9" in capsys.readouterr().err


def _raises(preset, device):
    raise RuntimeError("out of something\nsecond line: the cause")


def test_a_failing_runner_is_named_exit_1_and_others_still_reported(monkeypatch, capsys):
    broken = dataclasses.replace(RUNNERS["py"], name="broken", creator=_raises)
    monkeypatch.setitem(RUNNERS, "broken", broken)
    rc = main(["bench", "--rnns", "broken", "cudnn", "--group", "rnns", "--print-json", "oss",
               *SMOKE_ARGS])
    out, err = capsys.readouterr()
    assert rc == 1  # the measured thing failed: not a usage error
    assert "runner broken failed: RuntimeError: second line: the cause" in err
    assert "1 of 2 runners failed: broken" in err
    assert set(json.loads(out)["lstm"]) == {"cudnn"}


def test_unknown_runner_is_a_usage_error_listing_the_valid_ones(capsys):
    rc = main(["bench", "--rnns", "cudnn", "lstm9000", *SMOKE_ARGS])
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1
    assert "'lstm9000'" in err and "jit_premul_bias" in err and "resnet50_jit" in err


@pytest.mark.parametrize("argv, message", [
    (["--nloops", "0"], "--nloops: must be a positive integer"),
    (["--seqLength", "x"], "not an integer: 'x'"),
    (["--print-json", "xml"], "invalid choice: 'xml'"),
    (["--fuser", "nvfuser"], "invalid choice: 'nvfuser'"),
    (["--device", "tpu"], "unsupported device 'tpu'"),
    (["--cnns", "cudnn"], "cudnn cannot be given to --cnns"),
])
def test_bad_flags_are_one_line_usage_errors(argv, message, capsys):
    assert exit_code(["bench", "--preset", "smoke", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
